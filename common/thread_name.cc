// Listing this process's threads and their names, from /proc.
#include "common/thread_name.h"

#include <dirent.h>

#include <cstdlib>
#include <fstream>

namespace ember {

std::set<pid_t> ThreadIdsOfThisProcess() {
  std::set<pid_t> ids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return ids;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9') ids.insert(std::atoi(entry->d_name));
  }
  closedir(dir);
  return ids;
}

std::string ThreadNameOf(pid_t id) {
  std::ifstream comm("/proc/self/task/" + std::to_string(id) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

}  // namespace ember
