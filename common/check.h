// EMBER_CHECK: aborts loudly on a broken invariant (a bug), printing file:line and context.
//
// Never use it for invalid input or peer behaviour: those are Status returns (common/status.h).
#pragma once

#include <sstream>
#include <string>

namespace ember::internal {

[[noreturn]] void CheckFailed(const char* file, int line, const char* condition,
                              const std::string& detail);

template <typename... Args>
std::string CheckDetail(const Args&... args) {
  std::ostringstream out;
  ((out << args << ' '), ...);
  return out.str();
}

}  // namespace ember::internal

// EMBER_CHECK(cond, values...): values are streamed into the failure message.
#define EMBER_CHECK(cond, ...)                                                      \
  do {                                                                              \
    if (!(cond)) [[unlikely]] {                                                     \
      ::ember::internal::CheckFailed(__FILE__, __LINE__, #cond,                      \
                                     ::ember::internal::CheckDetail(__VA_ARGS__));  \
    }                                                                               \
  } while (0)
