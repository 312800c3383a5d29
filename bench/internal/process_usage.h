// CPU time of threads and resident memory of this process, read from the kernel, for the
// benchmarks' cost figures. Private to bench/. Reentrant.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace ember::bench {

// CPU seconds a thread of this process has used (0 once it has exited).
double ThreadCpuSeconds(pid_t thread_id);
// The sum over `thread_ids`.
double CpuSecondsOf(const std::vector<pid_t>& thread_ids);
// CPU seconds all threads of this process have used.
double ProcessCpuSeconds();
// This process's resident memory in bytes.
uint64_t ResidentBytes();

}  // namespace ember::bench
