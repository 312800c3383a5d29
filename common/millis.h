// Millis: the unit of every timeout, deadline and interval that ember's calls take.
#pragma once

#include <chrono>

namespace ember {

using Millis = std::chrono::milliseconds;

}  // namespace ember
