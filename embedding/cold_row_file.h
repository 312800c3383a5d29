// ColdRowFile: a tiered table's rows that left memory, kept in a file beside RocksDB so that
// reading one back costs a hash and a copy instead of a RocksDB lookup. The file starts empty at
// every open.
//
// The file is a fixed array of buckets, mapped into memory (MAP_SHARED: its pages live in the page
// cache, outside the table's memory budget). A key hashes to one bucket, which holds a few slots:
// per slot a hint (16 bits: 0 for an empty slot, else a fingerprint of key and partition and
// whether the row is changed), a tag (key, partition, generation, whether the row is changed) and
// a row of floats_per_row floats. A bucket takes one page (rows too wide for four slots a page:
// four slots, to the next cache line), hints first: in one cache line for rows of 28 floats or
// more. A lookup reads that line, then the tag and row of the slot whose hint matches. A tag is
// valid while its generation is its partition's current one; ForgetPartition makes a partition's
// rows invalid at once by starting a new generation. A full bucket replaces its unchanged slots
// in turn (stale ones first), so a file smaller than the cold rows keeps the rows stored last. A
// changed row is never replaced: only its own key's store, or forgetting its partition, ends it;
// a store that finds no other slot is refused.
//
// The file is created, reserved (fallocate, so that writes into the mapping never meet a full
// disk) and unlinked at once: nothing is left on disk when the process ends, however it ends.
// Then it is written with zeros, a chunk at a time (the first 64 MiB before Create returns, the
// rest by a thread of its own): a page of reserved but never written blocks costs some 11 us of
// kernel time when first written through the mapping, against about 1.4 us a page zeroed in
// bulk. A chunk not zeroed yet holds no row (Find misses, Store refuses). The zeros go in writes
// of 64 KiB, which keeps the page cache's folios of the file that small (see kZeroWriteBytes).
//
// What the rows mean is the tier's (disk_tier.h): an unchanged row is what RocksDB holds for its
// key; a changed one is newer than RocksDB (and, where the store keeps a push log, the log holds
// its changes).
//
// Thread-safety: every method may be called from many threads; a bucket is read and written under
// one of a fixed set of locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "common/status.h"

namespace ember::embedding {

// A server's cold row files hold, by default, four times the rows its memory budget holds: a
// table four times its budget fits in them whole.
inline constexpr uint64_t kColdFileTimesBudget = 4;

class ColdRowFile {
 public:
  // A file of about `capacity_bytes` (at least one bucket) in `dir`, for rows of `floats_per_row`
  // floats over `num_partitions` partitions. Unavailable naming the path when the file cannot be
  // created, reserved or mapped.
  static Result<std::unique_ptr<ColdRowFile>> Create(const std::string& dir,
                                                     uint32_t floats_per_row,
                                                     uint32_t num_partitions,
                                                     uint64_t capacity_bytes);
  ~ColdRowFile();
  ColdRowFile(const ColdRowFile&) = delete;
  ColdRowFile& operator=(const ColdRowFile&) = delete;

  // Copies the row of (partition, key) into `out` (floats_per_row floats) and says in `changed`
  // whether it was stored changed; false when not held.
  bool Find(uint32_t partition, uint64_t key, float* out, bool* changed) const;
  // Whether the row of (partition, key) is held, stored changed.
  bool HoldsChanged(uint32_t partition, uint64_t key) const;
  // For each i, in order: found(i, row, changed) with the row of (partitions[i], keys[i]) in the
  // file (floats_per_row floats; valid during the call only, which holds its bucket's lock and
  // must not use the file), or missed(i) when not held. Each bucket's hints are read a few keys
  // ahead, and the row they point to brought into the cache before it is used.
  using FoundRow = std::function<void(size_t i, const float* row, bool changed)>;
  void FindEach(std::span<const uint32_t> partitions, std::span<const uint64_t> keys,
                const FoundRow& found, const std::function<void(size_t i)>& missed) const;
  // Stores the row of (partition, key), `changed` or not, replacing its earlier copy or an
  // unchanged slot of its bucket; false (nothing stored) when the bucket holds only other keys'
  // changed rows, or is not zeroed yet.
  bool Store(uint32_t partition, uint64_t key, std::span<const float> row, bool changed);
  // Stores each of `rows` (floats_per_row floats each) as Store does, a few keys' buckets ahead in
  // the cache; refused(i) for each row not stored (may be empty).
  struct RowToStore {
    uint32_t partition;
    uint64_t key;
    const float* row;
  };
  void StoreEach(std::span<const RowToStore> rows, bool changed,
                 const std::function<void(size_t i)>& refused);
  // The row of (partition, key), if held, is unchanged from now on (its contents stay).
  void MarkUnchanged(uint32_t partition, uint64_t key);
  // Every row of `partition` held so far, changed or not, is no longer found.
  void ForgetPartition(uint32_t partition);

  uint64_t slots() const { return uint64_t{num_buckets_} * slots_per_bucket_; }
  // Whether every chunk is zeroed, so that every bucket holds rows.
  bool ready() const { return chunk_ready_[num_chunks_ - 1].load(std::memory_order_acquire); }
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  struct Tag {
    uint64_t key;
    uint32_t partition;
    uint32_t generation;  // its low 31 bits, 0: empty; kChangedBit: stored changed
  };
  static constexpr uint32_t kChangedBit = uint32_t{1} << 31;
  static constexpr uint32_t kGenerationMask = kChangedBit - 1;
  // A slot's hint: 0 empty; else its fingerprint (kFingerprintMask bits, never 0) and, in
  // kChangedHint, whether its row is changed.
  static constexpr uint16_t kChangedHint = uint16_t{1} << 15;
  static constexpr uint16_t kFingerprintMask = kChangedHint - 1;
  // Where a key's row goes: its bucket and the fingerprint its slot's hint carries.
  struct Place {
    uint64_t bucket;
    uint16_t fingerprint;
  };
  static constexpr uint64_t kTagBytes = 16;  // the bucket layout's, in cold_row_file.cc
  static_assert(sizeof(Tag) == kTagBytes);
  static constexpr size_t kLocks = 512;
  struct alignas(64) BucketLock {
    std::mutex mu;
  };

  ColdRowFile(uint32_t floats_per_row, uint32_t num_partitions, uint64_t capacity_bytes);
  // Slots in a bucket; the bytes of its hints (whole cache lines), and of the bucket (hints, tags,
  // then rows: a multiple of a cache line).
  static uint32_t SlotsPerBucket(uint32_t floats_per_row);
  static uint64_t HintBytes(uint32_t slots);
  static uint64_t BucketBytes(uint32_t floats_per_row);

  Place PlaceOf(uint32_t partition, uint64_t key) const;
  uint16_t* HintsOf(uint64_t bucket) const;
  Tag* TagsOf(uint64_t bucket) const;
  float* RowOf(uint64_t bucket, uint32_t slot) const;
  std::mutex& LockOf(uint64_t bucket) const { return locks_[bucket % kLocks].mu; }
  bool Ready(uint64_t bucket) const {
    return chunk_ready_[bucket / buckets_per_chunk_].load(std::memory_order_acquire);
  }
  // Writes zeros over the buckets of `chunk` and marks it ready.
  Status ZeroChunk(uint64_t chunk);
  // Zeroes the chunks: up to kZeroedAtCreateBytes before returning, the rest on zeroer_.
  Status ZeroChunks();
  uint32_t Generation(uint32_t partition) const {
    return generations_[partition].load(std::memory_order_acquire);
  }
  // The slot holding `key` of `partition` at `place`, valid or stale; slots_per_bucket_ when none.
  uint32_t HeldSlot(Place place, uint32_t partition, uint64_t key) const;
  // The slot of `key` of `partition` at `place`, valid; slots_per_bucket_ when none.
  uint32_t SlotOf(Place place, uint32_t partition, uint64_t key) const;
  // The slot `key` of `partition` goes to at `place`: its own, an empty one, a stale one, else
  // the bucket's next unchanged one in turn; slots_per_bucket_ when every other slot is changed.
  uint32_t SlotFor(Place place, uint32_t partition, uint64_t key);
  // Under the bucket's lock: stores `row` in `slot` (of `SlotFor`) at `place`.
  void StoreInSlot(Place place, uint32_t slot, uint32_t partition, uint64_t key, const float* row,
                   bool changed);
  // Calls visit(i, place) for each i below n in order, the buckets of place_of(i) brought into
  // the cache ahead: their hints first, then the rows the hints point to (or, `for_store`, the
  // slot a new row would take).
  template <typename PlaceOfIndex, typename Visit>
  void VisitPrefetched(size_t n, const PlaceOfIndex& place_of, bool for_store,
                       const Visit& visit) const;

  const uint32_t floats_per_row_;
  const uint32_t num_partitions_;
  const uint32_t slots_per_bucket_;
  const uint64_t hint_bytes_;
  const uint64_t bucket_bytes_;
  const uint64_t num_buckets_;
  const uint64_t file_bytes_;
  const uint64_t buckets_per_chunk_;
  const uint64_t num_chunks_;
  int fd_ = -1;
  char* base_ = nullptr;
  std::unique_ptr<std::atomic<uint32_t>[]> generations_;  // per partition, from 1
  std::atomic<bool> any_forgotten_{false};                // whether a slot may be stale
  std::unique_ptr<uint8_t[]> next_replaced_;              // per bucket, under its lock
  mutable std::unique_ptr<BucketLock[]> locks_;
  std::unique_ptr<std::atomic<bool>[]> chunk_ready_;
  std::atomic<bool> stop_zeroing_{false};
  std::thread zeroer_;
};

}  // namespace ember::embedding
