// Failure path of EMBER_CHECK.
#include "common/check.h"

#include <cstdio>
#include <cstdlib>

namespace ember::internal {

void CheckFailed(const char* file, int line, const char* condition, const std::string& detail) {
  std::fprintf(stderr, "EMBER_CHECK failed at %s:%d: %s %s\n", file, line, condition,
               detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace ember::internal
