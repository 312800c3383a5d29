// The number of cores this process may run on (taskset, cpusets), else all of the machine's.
#pragma once

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <thread>

namespace ember {

inline uint32_t UsableCores() {
  cpu_set_t allowed;
  const int usable = sched_getaffinity(0, sizeof(allowed), &allowed) == 0 ? CPU_COUNT(&allowed) : 0;
  return std::max(1u,
                  usable > 0 ? static_cast<uint32_t>(usable) : std::thread::hardware_concurrency());
}

}  // namespace ember
