// ClockRing: the resident keys of one partition in CLOCK order, for choosing rows to evict.
//
// CLOCK approximates LRU at the cost of one reference bit per row (kept in the row's tier flags by
// the caller): the hand sweeps the ring, clearing the bit of rows used since its last pass and
// stopping at the first row not used since. Under Zipf traffic the hot head is touched on nearly
// every pass and stays, while the long tail is swept out; unlike LRU, a hit costs no list splice.
//
// Each slot holds the key and its row (RowStore rows never move while resident), so that the hand
// reads a row's flags without a lookup in the index.
//
// Not thread-safe: guarded by the owning partition's lock, like its RowStore.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ember::embedding {

class ClockRing {
 public:
  size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }

  void Add(uint64_t key, float* row) { slots_.push_back(Slot{key, row}); }
  // The slot under the hand (needs a non-empty ring), and the row `ahead` slots after it.
  size_t hand() const { return hand_; }
  float* RowAtHand() const { return slots_[hand_].row; }
  float* RowAhead(size_t ahead) const { return slots_[(hand_ + ahead) % slots_.size()].row; }
  uint64_t KeyAt(size_t slot) const { return slots_[slot].key; }
  void Advance() { hand_ = hand_ + 1 < slots_.size() ? hand_ + 1 : 0; }
  // Removes the key in `slot`, moving the last key into it. Removing several slots is safe in
  // descending slot order.
  void Remove(size_t slot) {
    slots_[slot] = slots_.back();
    slots_.pop_back();
    if (hand_ >= slots_.size()) hand_ = 0;
  }
  void Clear() {
    slots_ = std::vector<Slot>();
    hand_ = 0;
  }

 private:
  struct Slot {
    uint64_t key;
    float* row;
  };
  std::vector<Slot> slots_;
  size_t hand_ = 0;
};

}  // namespace ember::embedding
