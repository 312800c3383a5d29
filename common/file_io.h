// Whole-file reads and atomic whole-file writes, for checkpoint files.
//
// WriteFileAtomically writes to a temporary file beside `path` (a name of its own, created
// exclusively and never through a symlink), flushes it to disk and renames it over `path`, so a
// reader sees either the old file or the complete new one, never a torn write. Reads have a size
// limit. Errors name the path and the system's reason. Reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ember {

// kLater skips the flush of each file: a writer of many files calls SyncFilesystemOf once after
// the last one (one flush instead of one per file), before anything that vouches for them.
enum class Flush { kNow, kLater };
Status WriteFileAtomically(const std::string& path, std::string_view bytes,
                           Flush flush = Flush::kNow);
// Whether `filename` is one of WriteFileAtomically's temporary files (left by a crash).
bool IsTemporaryFileName(std::string_view filename);
// Flushes every written file and rename of the filesystem holding `path` to disk (syncfs).
Status SyncFilesystemOf(const std::string& path);
// What ReadWholeFile reads at most unless told otherwise: checkpoint files of large partitions.
constexpr uint64_t kMaxReadFileBytes = uint64_t{16} << 30;
// NotFound when the file is missing or not a regular file; ResourceExhausted when it holds more
// than `max_bytes`; Unavailable (with the reason) for other read errors.
Result<std::string> ReadWholeFile(const std::string& path,
                                  uint64_t max_bytes = kMaxReadFileBytes);
// `dir` made absolute (against the working directory) and canonical: no ".", ".." or empty
// components, symlinks resolved where it exists. InvalidArgument naming `what` when empty.
Result<std::string> CanonicalDirectory(const std::string& dir, std::string_view what);
// Whether `path` is absolute, free of NUL bytes and in normal form (no ".", ".." or empty
// components, no trailing slash): what a peer may name as a directory.
bool IsAbsoluteNormalPath(std::string_view path);
// Creates `dir` and its parents as needed.
Status MakeDirectories(const std::string& dir);

}  // namespace ember
