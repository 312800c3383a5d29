// CPU time and memory of this process, from clock_gettime and /proc.
#include "bench/internal/process_usage.h"

#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace ember::bench {

// CPU seconds a thread of this process has used. The kernel exposes every thread's CPU clock
// under a clock id derived from its thread id (the encoding pthread_getcpuclockid uses), which
// gives nanoseconds; /proc's utime + stime in clock ticks is the fallback.
double ThreadCpuSeconds(pid_t thread_id) {
  const auto clock_id = static_cast<clockid_t>((~static_cast<unsigned>(thread_id) << 3) |
                                               4u /*per thread*/ | 2u /*scheduler time*/);
  timespec time{};
  if (clock_gettime(clock_id, &time) == 0) return time.tv_sec + time.tv_nsec * 1e-9;
  std::ifstream stat("/proc/self/task/" + std::to_string(thread_id) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;  // the thread has exited
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {  // fields 14 and 15 of the stat line
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double CpuSecondsOf(const std::vector<pid_t>& thread_ids) {
  double total = 0;
  for (pid_t id : thread_ids) total += ThreadCpuSeconds(id);
  return total;
}

double ProcessCpuSeconds() {
  timespec time{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time);
  return time.tv_sec + time.tv_nsec * 1e-9;
}

uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size_pages = 0, resident_pages = 0;
  statm >> size_pages >> resident_pages;
  return resident_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace ember::bench
