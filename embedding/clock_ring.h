// ClockRing: the resident keys of one partition in CLOCK order, for choosing rows to evict.
//
// CLOCK approximates LRU at the cost of one reference bit per row (kept in the row's tier flags by
// the caller): the hand sweeps the ring, clearing the bit of rows used since its last pass and
// stopping at the first row not used since. Under Zipf traffic the hot head is touched on nearly
// every pass and stays, while the long tail is swept out; unlike LRU, a hit costs no list splice.
//
// Not thread-safe: guarded by the owning partition's lock, like its RowStore.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::embedding {

class ClockRing {
 public:
  size_t size() const { return keys_.size(); }
  bool empty() const { return keys_.empty(); }

  void Add(uint64_t key) { keys_.push_back(key); }
  // The key under the hand (needs a non-empty ring) and its slot.
  uint64_t KeyAtHand() const { return keys_[hand_]; }
  uint64_t KeyAt(size_t slot) const { return keys_[slot]; }
  size_t hand() const { return hand_; }
  void Advance() { hand_ = hand_ + 1 < keys_.size() ? hand_ + 1 : 0; }
  // Removes the key in `slot`, moving the last key into it. Removing several slots is safe in
  // descending slot order.
  void Remove(size_t slot) {
    keys_[slot] = keys_.back();
    keys_.pop_back();
    if (hand_ >= keys_.size()) hand_ = 0;
  }
  void Clear() {
    keys_ = std::vector<uint64_t>();
    hand_ = 0;
  }

 private:
  std::vector<uint64_t> keys_;
  size_t hand_ = 0;
};

}  // namespace ember::embedding
