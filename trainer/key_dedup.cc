// Key deduplication with a reusable open-addressing hash table (linear probing).
#include "trainer/key_dedup.h"

#include <algorithm>
#include <bit>

#include "common/hash.h"

namespace ember::trainer {
namespace {

// A table whose entries are valid only when their stamp equals the current call's stamp, so
// starting a new call costs nothing instead of clearing every entry.
class DedupTable {
 public:
  // Prepares for up to `count` distinct keys (load factor at most 1/2).
  void Reset(size_t count) {
    const size_t wanted = std::bit_ceil(std::max<size_t>(16, count * 2));
    if (wanted > entries_.size()) {
      entries_.assign(wanted, Entry{});
      mask_ = wanted - 1;
      stamp_ = 0;
    }
    if (++stamp_ == 0) {  // wrapped: old stamps could look current again
      for (Entry& entry : entries_) entry.stamp = 0;
      stamp_ = 1;
    }
  }

  // The index stored for `key`, inserting `next_index` when the key is new.
  uint32_t FindOrInsert(uint64_t key, uint32_t next_index, bool* inserted) {
    size_t pos = Mix64(key) & mask_;
    while (true) {
      Entry& entry = entries_[pos];
      if (entry.stamp != stamp_) {
        entry = Entry{key, next_index, stamp_};
        *inserted = true;
        return next_index;
      }
      if (entry.key == key) {
        *inserted = false;
        return entry.index;
      }
      pos = (pos + 1) & mask_;
    }
  }

 private:
  struct Entry {
    uint64_t key = 0;
    uint32_t index = 0;
    uint32_t stamp = 0;
  };
  std::vector<Entry> entries_;
  size_t mask_ = 0;
  uint32_t stamp_ = 0;
};

}  // namespace

void Dedupe(std::span<const uint64_t> keys, UniqueKeys* out) {
  thread_local DedupTable table;
  table.Reset(keys.size());
  out->keys.clear();
  out->inverse.resize(keys.size());
  for (size_t b = 0; b < keys.size(); ++b) {
    const uint64_t key = keys[b];
    bool inserted = false;
    const uint32_t index =
        table.FindOrInsert(key, static_cast<uint32_t>(out->keys.size()), &inserted);
    if (inserted) out->keys.push_back(key);
    out->inverse[b] = index;
  }
}

}  // namespace ember::trainer
