// ChangedKeys: the keys that changed since some point, noted one change at a time (a key may be
// noted many times). Notes are appended unsorted and deduplicated when they reach twice their
// last deduplicated count, so a note costs an append and memory stays within about two keys per
// changed key. What checkpoint cuts (change_tracker.h) and partitions moving out of a server
// (ps/server/moves_out.h) track.
//
// Not thread-safe: its owner guards it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace ember::embedding {

class ChangedKeys {
 public:
  // Notes are first deduplicated at this many.
  static constexpr size_t kFirstCompaction = 256;

  // Notes `key`; true when the notes were just deduplicated (size() is then the keys' count).
  bool Add(uint64_t key) {
    keys_.push_back(key);
    if (keys_.size() < compact_at_) return false;
    SortUnique(keys_);
    compact_at_ = std::max(kFirstCompaction, 2 * keys_.size());
    return true;
  }
  // Notes held (a key noted twice since the last deduplication counts twice).
  size_t size() const { return keys_.size(); }
  bool empty() const { return keys_.empty(); }
  // Appends the notes to `out` (not deduplicated: see SortUnique).
  void AppendTo(std::vector<uint64_t>& out) const {
    out.insert(out.end(), keys_.begin(), keys_.end());
  }
  // The keys, ascending, each once.
  std::vector<uint64_t> Sorted() const {
    std::vector<uint64_t> keys = keys_;
    SortUnique(keys);
    return keys;
  }

  // The keys, ascending, each once; the notes start empty again.
  std::vector<uint64_t> TakeSorted() {
    std::vector<uint64_t> keys = std::move(keys_);
    *this = ChangedKeys();
    SortUnique(keys);
    return keys;
  }

  static void SortUnique(std::vector<uint64_t>& keys) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  }

 private:
  std::vector<uint64_t> keys_;
  size_t compact_at_ = kFirstCompaction;
};

}  // namespace ember::embedding
