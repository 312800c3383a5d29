// Durations and counts for progress lines.
#include "common/human_format.h"

#include <cmath>
#include <cstdio>

namespace ember {

std::string FormatDuration(double seconds) {
  if (!(seconds >= 0)) return "?";
  const long long total = std::llround(seconds);
  char text[32];
  if (total < 60) {
    std::snprintf(text, sizeof(text), "%llds", total);
  } else if (total < 3600) {
    std::snprintf(text, sizeof(text), "%lldm%02llds", total / 60, total % 60);
  } else {
    std::snprintf(text, sizeof(text), "%lldh%02lldm", total / 3600, total / 60 % 60);
  }
  return text;
}

std::string FormatCount(double count) {
  char text[32];
  if (!(std::fabs(count) >= 999.5)) {
    std::snprintf(text, sizeof(text), "%.0f", count);
    return text;
  }
  static constexpr const char* kSuffixes = "kMGTPE";
  int exponent = 0;
  while (std::fabs(count) >= 999.5 && exponent < 6) {
    count /= 1000;
    ++exponent;
  }
  const int decimals = std::fabs(count) >= 99.95 ? 0 : std::fabs(count) >= 9.995 ? 1 : 2;
  std::snprintf(text, sizeof(text), "%.*f%c", decimals, count, kSuffixes[exponent - 1]);
  return text;
}

}  // namespace ember
