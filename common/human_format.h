// Figures as people read them in progress lines: durations ("3m05s") and counts ("1.25M").
#pragma once

#include <cstdint>
#include <string>

namespace ember {

// "42s", "3m05s", "2h04m"; "?" for a negative or unknown (NaN) duration.
std::string FormatDuration(double seconds);

// "950", "12.3k", "1.25M", "3.10G", "2.00T": three significant digits above a thousand.
std::string FormatCount(double count);

}  // namespace ember
