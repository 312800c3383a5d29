// This process's threads by name: naming the calling thread (as shown by top -H, perf and
// debuggers; at most 15 characters kept), listing the threads' ids and reading their names back
// (from /proc, for the benchmarks' CPU accounting).
#pragma once

#include <dirent.h>
#include <pthread.h>
#include <sys/types.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

namespace ember {

inline void SetThreadName(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

// The ids of this process's threads now.
inline std::set<pid_t> ThreadIdsOfThisProcess() {
  std::set<pid_t> ids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return ids;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9') ids.insert(std::atoi(entry->d_name));
  }
  closedir(dir);
  return ids;
}

// The name of thread `id` of this process (empty once it has exited).
inline std::string ThreadNameOf(pid_t id) {
  std::ifstream comm("/proc/self/task/" + std::to_string(id) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

}  // namespace ember
