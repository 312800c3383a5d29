// RandomId: a random non-zero 64-bit id, for what names itself to servers without asking anyone
// first (a client's push sender id, a replica's follower id).
#pragma once

#include <cstdint>
#include <random>

namespace ember {

inline uint64_t RandomId() {
  std::random_device device;
  uint64_t id = 0;
  while (id == 0) id = (uint64_t{device()} << 32) ^ device();
  return id;
}

}  // namespace ember
