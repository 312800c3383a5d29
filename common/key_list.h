// Key lists: plain text with one uint64 key a line, as `ember lookup --keys FILE|-` reads them.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "common/status.h"

namespace ember {

// The keys of `in`, in order; spaces, tabs and carriage returns around a key and blank lines are
// ignored. Anything else is InvalidArgument naming `source`, the line and (a bounded quote of) its
// text.
Result<std::vector<uint64_t>> ReadKeyList(std::istream& in, const std::string& source);

}  // namespace ember
