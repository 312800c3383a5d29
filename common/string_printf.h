// StringPrintf: printf into a std::string, for table rows and progress lines.
#pragma once

#include <string>

namespace ember {

// The formatted text, however long.
[[gnu::format(printf, 1, 2)]] std::string StringPrintf(const char* format, ...);

}  // namespace ember
