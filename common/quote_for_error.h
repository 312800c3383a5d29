// QuoteForError: a peer-supplied name (a table, a barrier, a directory) as an error echoes it.
//
// A name comes from the request, so it may be a megabyte long or hold control bytes; echoed as
// it is, it would make every error (and its log line) as large. The quoted form keeps at most
// `max` bytes of it, marks the cut with "..." and the original length, and shows bytes that are
// not printable ASCII as '?'.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ember {

// Enough for any real path (PATH_MAX): a directory is cut only when no file system takes it.
constexpr size_t kMaxQuotedPath = 4096;

// "'name'" for a short name; "'first max bytes...' (N bytes)" for a longer one.
inline std::string QuoteForError(std::string_view name, size_t max = 64) {
  const bool cut = name.size() > max;
  std::string quoted = "'";
  for (char c : cut ? name.substr(0, max) : name) {
    quoted += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  quoted += cut ? "...' (" + std::to_string(name.size()) + " bytes)" : "'";
  return quoted;
}

}  // namespace ember
