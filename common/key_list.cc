// ReadKeyList.
#include "common/key_list.h"

#include <charconv>

#include "common/quote_for_error.h"

namespace ember {

Result<std::vector<uint64_t>> ReadKeyList(std::istream& in, const std::string& source) {
  std::vector<uint64_t> keys;
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const size_t last = line.find_last_not_of(" \t\r");
    const char* begin = line.data() + first;
    const char* end = line.data() + last + 1;
    uint64_t key = 0;
    const auto [parsed_to, error] = std::from_chars(begin, end, key);
    if (error != std::errc() || parsed_to != end) {
      return InvalidArgument(source + " line " + std::to_string(number) + ": " +
                             QuoteForError(std::string_view(begin, end - begin)) +
                             " is not a key (an unsigned 64-bit integer)");
    }
    keys.push_back(key);
  }
  if (in.bad()) return InvalidArgument("reading " + source + " failed");
  return keys;
}

}  // namespace ember
