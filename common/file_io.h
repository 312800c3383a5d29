// Whole-file reads and atomic whole-file writes, for checkpoint files.
//
// WriteFileAtomically writes to `path`.tmp, flushes it to disk and renames it over `path`, so a
// reader sees either the old file or the complete new one, never a torn write. Errors name the
// path and the system's reason. Reentrant (distinct paths from distinct threads).
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace ember {

// kLater skips the flush of each file: a writer of many files calls SyncFilesystemOf once after
// the last one (one flush instead of one per file), before anything that vouches for them.
enum class Flush { kNow, kLater };
Status WriteFileAtomically(const std::string& path, std::string_view bytes,
                           Flush flush = Flush::kNow);
// Flushes every written file and rename of the filesystem holding `path` to disk (syncfs).
Status SyncFilesystemOf(const std::string& path);
// NotFound when the file is missing; Unavailable (with the reason) for other read errors.
Result<std::string> ReadWholeFile(const std::string& path);
// Creates `dir` and its parents as needed.
Status MakeDirectories(const std::string& dir);

}  // namespace ember
