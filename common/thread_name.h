// This process's threads by name: naming the calling thread (as shown by top -H, perf and
// debuggers; at most 15 characters kept), listing the threads' ids and reading their names back
// (from /proc, for the benchmarks' CPU accounting).
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <set>
#include <string>

namespace ember {

inline void SetThreadName(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

// The ids of this process's threads now.
std::set<pid_t> ThreadIdsOfThisProcess();

// The name of thread `id` of this process (empty once it has exited).
std::string ThreadNameOf(pid_t id);

}  // namespace ember
