// Durations and counts for progress lines.
#include "common/human_format.h"

#include <cmath>

#include "common/string_printf.h"

namespace ember {

std::string FormatDuration(double seconds) {
  if (!(seconds >= 0)) return "?";
  const long long total = std::llround(seconds);
  if (total < 60) return StringPrintf("%llds", total);
  if (total < 3600) return StringPrintf("%lldm%02llds", total / 60, total % 60);
  return StringPrintf("%lldh%02lldm", total / 3600, total / 60 % 60);
}

std::string FormatCount(double count) {
  if (!(std::fabs(count) >= 999.5)) return StringPrintf("%.0f", count);
  static constexpr const char* kSuffixes = "kMGTPE";
  int exponent = 0;
  while (std::fabs(count) >= 999.5 && exponent < 6) {
    count /= 1000;
    ++exponent;
  }
  const int decimals = std::fabs(count) >= 99.95 ? 0 : std::fabs(count) >= 9.995 ? 1 : 2;
  return StringPrintf("%.*f%c", decimals, count, kSuffixes[exponent - 1]);
}

}  // namespace ember
