// Names the calling thread, as shown by top -H, perf and debuggers (at most 15 characters kept).
#pragma once

#include <pthread.h>

#include <string>

namespace ember {

inline void SetThreadName(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace ember
