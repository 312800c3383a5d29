// Private to EmbeddingTable's .cc files: its tier state, how a request's keys are grouped by lock
// stripe, and the flags word a tiered table keeps after each row in memory.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "embedding/embedding_table.h"
#include "embedding/hint_pins.h"

namespace ember::embedding {

// The tier state of a tiered table.
struct EmbeddingTable::Tier {
  TierOptions options;
  std::vector<ClockRing> clocks;  // per partition, guarded by its stripe's lock
  std::atomic<uint64_t> resident{0};
  std::atomic<uint64_t> loaded{0};
  std::atomic<uint64_t> writebacks{0};
  uint64_t relogger = 0;  // the handle of RelogDirtyRows in the push log; 0: none
  // Per partition, guarded by its stripe's lock: the rows a restart would find (those only on
  // disk, and those in memory with kOnDisk), persisted with every write that changes it (see
  // EmbeddingTable::CountRecord), so that opening a table does not count rows.
  std::vector<uint64_t> durable_rows;

  // Look-ahead (embedding_table_prefetch.cc): the hints held and their pins.
  std::unique_ptr<HintPins> pins;
  std::atomic<uint64_t> prefetch_raced{0};  // rows read ahead but not kept (see Prefetch)
};

namespace internal {

// A request's key positions grouped by lock stripe (a stable counting sort, so duplicate keys keep
// their order), with each key's partition and, once looked up, its row. Reused per thread; filled
// by EmbeddingTable::ForEachRequestRow (embedding_table.cc).
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
// `table_id` (the request's one hash per key); partition p is in stripe p % num_stripes, a power
// of two. The groups stay valid until the thread's next call.
RequestGroups& GroupByStripe(std::span<const uint64_t> keys, uint64_t table_id,
                             uint32_t num_partitions, uint32_t num_stripes);

// Tier flags, in the float after a tiered row's weights and state.
enum RowFlag : uint32_t {
  kReferenced = 1,  // used since the CLOCK hand last passed
  kDirty = 2,       // differs from disk (or was never written)
  kOnDisk = 4,      // a version of the row is durable: in RocksDB, or in the push log (which
                    // a restart replays into RocksDB); counted in Tier::durable_rows
  kChosen = 8,      // picked as an eviction victim, not yet dropped
  kLogged = 1 << 15,  // the row's last change is in the push log, in the segment the bits
                      // kLogSegmentBits name or a later one (see LoggedAtMost)
};
// Bits 4..14 of the flags: the low bits of the push log segment that was active when the row's last
// change was appended (with kLogged).
constexpr uint32_t kLogSegmentShift = 4;
constexpr uint32_t kLogSegmentBits = uint32_t{0x7ff} << kLogSegmentShift;
inline uint32_t WithLogSegment(uint32_t flags, uint64_t segment) {
  return (flags & ~kLogSegmentBits) | kLogged |
         ((static_cast<uint32_t>(segment) << kLogSegmentShift) & kLogSegmentBits);
}
// Whether a changed row's last change may be only in push log segments numbered `through` or
// lower: not logged at all, or logged while such a segment was active. (While rows stay changed,
// segments are retired within a few numbers of each other, far inside the bits' range.)
inline bool LoggedAtMost(uint32_t flags, uint64_t through) {
  if (!(flags & kLogged)) return true;
  constexpr uint32_t kMask = kLogSegmentBits >> kLogSegmentShift;
  const uint32_t segment = (flags & kLogSegmentBits) >> kLogSegmentShift;
  const uint32_t behind = (static_cast<uint32_t>(through) - segment) & kMask;
  return behind <= kMask / 2;
}
// The high 16 bits of the flags count the hints pinning the row (at most the hints a table holds).
constexpr uint32_t kPinOne = uint32_t{1} << 16;
inline uint32_t PinCount(uint32_t flags) { return flags >> 16; }

inline uint32_t LoadFlags(const float* word) {
  uint32_t flags;
  std::memcpy(&flags, word, sizeof(flags));
  return flags;
}
inline void StoreFlags(float* word, uint32_t flags) { std::memcpy(word, &flags, sizeof(flags)); }

// Victims an eviction chooses per row a request inserted, at most: a table far over its budget
// (after the budget was lowered, or when another table grew) converges without one request
// evicting everything.
constexpr size_t kEvictionsPerInsert = 2;

// How many keys ahead of its use a row is looked up and prefetched (its index entry twice as far).
constexpr uint32_t kPrefetchDistance = 8;

inline void PrefetchRow(const float* row, size_t floats) {
  const char* bytes = reinterpret_cast<const char*>(row);
  for (size_t offset = 0; offset < floats * sizeof(float); offset += 64) {
    __builtin_prefetch(bytes + offset, 1);
  }
}

}  // namespace internal
}  // namespace ember::embedding
