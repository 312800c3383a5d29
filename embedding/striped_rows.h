// StripedRows: a table's rows in memory, one RowStore per virtual partition, guarded by lock
// stripes (partition p by stripe p % num_stripes()); and RequestGroups, a request's keys grouped by
// stripe so that each stripe's lock is taken once per request and its index entries and rows can
// be prefetched well ahead of use.
//
// Thread-safety: a partition's store may be used only under its stripe's lock; bytes() takes the
// locks itself.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "embedding/row_store.h"

namespace ember::embedding {

class StripedRows {
 public:
  // Rows of `row_floats` floats each, over `num_partitions` (at least 1) partitions.
  StripedRows(uint32_t num_partitions, uint32_t row_floats);

  uint32_t num_partitions() const { return static_cast<uint32_t>(stores_.size()); }
  // A power of two.
  uint32_t num_stripes() const { return num_stripes_; }
  uint32_t row_floats() const { return row_floats_; }
  uint32_t StripeOf(uint32_t partition) const { return partition & (num_stripes_ - 1); }
  std::mutex& StripeMutex(uint32_t stripe) const { return stripes_[stripe].mu; }
  std::mutex& LockOf(uint32_t partition) const { return StripeMutex(StripeOf(partition)); }

  // The rows of `partition`, under its stripe's lock.
  RowStore& store(uint32_t partition) { return stores_[partition]; }
  const RowStore& store(uint32_t partition) const { return stores_[partition]; }
  // Every partition's store, for RowStore::Prefetch (safe without the locks).
  std::span<const RowStore> stores() const { return stores_; }

  // Approximate memory held: rows, indexes and the stripes, in bytes. Takes each stripe's lock.
  uint64_t bytes() const;

 private:
  // Cache-line aligned so that neighbouring stripes' locks do not share a line.
  struct alignas(64) Stripe {
    mutable std::mutex mu;
  };

  const uint32_t row_floats_;
  const uint32_t num_stripes_;
  std::unique_ptr<Stripe[]> stripes_;
  std::vector<RowStore> stores_;
};

// How many keys ahead of its use a row is looked up and prefetched (its index entry twice as far).
constexpr uint32_t kPrefetchDistance = 8;

// Prefetches `floats` floats of `row` for writing.
inline void PrefetchRow(const float* row, size_t floats) {
  const char* bytes = reinterpret_cast<const char*>(row);
  for (size_t offset = 0; offset < floats * sizeof(float); offset += 64) {
    __builtin_prefetch(bytes + offset, 1);
  }
}

// A request's key positions grouped by lock stripe (a stable counting sort, so duplicate keys keep
// their order), with each key's partition and, once looked up, its row. Reused per thread.
struct RequestGroups {
  std::vector<uint32_t> partition;  // by position in the request
  std::vector<uint32_t> order;      // positions, stripe after stripe
  std::vector<uint32_t> bounds;     // stripe s holds order[bounds[s], bounds[s + 1])
  std::vector<float*> rows;         // rows[j] is the row of position order[j]
  // Rows of keys not admitted (see AdmissionFilter), one per position at most, dropped after the
  // request; reserved up front so that the pointers handed out stay valid.
  std::vector<float> scratch;
  size_t scratch_used = 0;
  size_t scratch_row_floats = 0;

  uint32_t begin(uint32_t stripe) const { return bounds[stripe]; }
  uint32_t end(uint32_t stripe) const { return bounds[stripe + 1]; }
  bool empty(uint32_t stripe) const { return bounds[stripe] == bounds[stripe + 1]; }

  void ReserveScratch(size_t rows, size_t floats_per_row) {
    scratch.resize(rows * floats_per_row);
    scratch_used = 0;
    scratch_row_floats = floats_per_row;
  }
  bool IsScratch(const float* row) const {
    return row >= scratch.data() && row < scratch.data() + scratch_used;
  }
  float* NextScratchRow() {
    float* row = scratch.data() + scratch_used;
    scratch_used += scratch_row_floats;
    return row;
  }

  // Prefetches the index entries (RowStore::Prefetch) of the keys at order[i] for every i below
  // `limit` not prefetched yet, in group order and across stripes, so that a stripe's first
  // lookups find their entries in cache too.
  uint32_t entries_prefetched = 0;
  void PrefetchEntriesBelow(uint32_t limit, std::span<const uint64_t> keys,
                            std::span<const RowStore> stores) {
    for (limit = std::min(limit, static_cast<uint32_t>(order.size())); entries_prefetched < limit;
         ++entries_prefetched) {
      const uint32_t at = order[entries_prefetched];
      stores[partition[at]].Prefetch(keys[at]);
    }
  }
};

// Fills this thread's RequestGroups for `keys`, hashing each key to its partition of the table
// `table_id` (the request's one hash per key) and grouping by the stripes of `rows`. The groups
// stay valid until the thread's next call.
RequestGroups& GroupByStripe(std::span<const uint64_t> keys, uint64_t table_id,
                             const StripedRows& rows);

}  // namespace ember::embedding
