// Batch: the sparse keys of one training batch, per tower and slot, as a data source emits them.
#pragma once

#include <cstdint>
#include <vector>

namespace ember::trainer {

// Sample b's key in user-tower slot s is user_keys[s][b]; likewise for the item tower. Every slot
// holds exactly `size` keys. Sample b's user and item form the positive pair of row b.
struct Batch {
  uint32_t size = 0;
  std::vector<std::vector<uint64_t>> user_keys;  // [slot][sample]
  std::vector<std::vector<uint64_t>> item_keys;  // [slot][sample]
};

}  // namespace ember::trainer
