// ColdRowFile: a tiered table's rows that left memory, kept in a file beside RocksDB so that
// reading one back costs a hash and a copy instead of a RocksDB lookup. The file starts empty at
// every open.
//
// The file is a fixed array of buckets, mapped into memory (MAP_SHARED: its pages live in the page
// cache, outside the table's memory budget). A key hashes to one bucket, which holds a few slots:
// per slot a tag (key, partition, generation, whether the row is changed) and a row of
// floats_per_row floats. A tag is valid while its generation is its partition's current one;
// ForgetPartition makes a partition's rows invalid at once by starting a new generation. A full
// bucket replaces its unchanged slots in turn (stale ones first), so a file smaller than the cold
// rows keeps the rows stored last. A changed row is never replaced: only its own key's store, or
// forgetting its partition, ends it; a store that finds no other slot is refused.
//
// The file is created, reserved (fallocate, so that writes into the mapping never meet a full
// disk) and unlinked at once: nothing is left on disk when the process ends, however it ends.
// Then it is written with zeros, a chunk at a time (the first 64 MiB before Create returns, the
// rest by a thread of its own): a page of reserved but never written blocks costs some 11 us of
// kernel time when first written through the mapping, against about 1.4 us a page zeroed in
// bulk. A chunk not zeroed yet holds no row (Find misses, Store refuses).
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
  // Starts bringing the tags of `key`'s bucket into the cache, ahead of a Find or Store.
  void Prefetch(uint64_t key) const;
  // Stores the row of (partition, key), `changed` or not, replacing its earlier copy or an
  // unchanged slot of its bucket; false (nothing stored) when the bucket holds only other keys'
  // changed rows, or is not zeroed yet.
  bool Store(uint32_t partition, uint64_t key, std::span<const float> row, bool changed);
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
  static constexpr uint64_t kTagBytes = 16;  // the bucket layout's, in cold_row_file.cc
  static_assert(sizeof(Tag) == kTagBytes);
  static constexpr size_t kLocks = 512;
  struct alignas(64) BucketLock {
    std::mutex mu;
  };

  ColdRowFile(uint32_t floats_per_row, uint32_t num_partitions, uint64_t capacity_bytes);
  // Slots in a bucket (tags first, then rows) and its bytes, a multiple of a cache line.
  static uint32_t SlotsPerBucket(uint32_t floats_per_row);
  static uint64_t BucketBytes(uint32_t floats_per_row);

  uint64_t BucketOf(uint64_t key) const;
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
  // The slot of `key` of `partition` in `bucket`, valid; slots_per_bucket_ when none.
  uint32_t SlotOf(uint64_t bucket, uint32_t partition, uint64_t key) const;
  // The slot `key` of `partition` goes to in `bucket`: its own, an empty one, a stale one, else
  // the bucket's next unchanged one in turn; slots_per_bucket_ when every other slot is changed.
  uint32_t SlotFor(uint64_t bucket, uint32_t partition, uint64_t key);

  const uint32_t floats_per_row_;
  const uint32_t num_partitions_;
  const uint32_t slots_per_bucket_;
  const uint64_t bucket_bytes_;
  const uint64_t num_buckets_;
  const uint64_t file_bytes_;
  const uint64_t buckets_per_chunk_;
  const uint64_t num_chunks_;
  int fd_ = -1;
  char* base_ = nullptr;
  std::unique_ptr<std::atomic<uint32_t>[]> generations_;  // per partition, from 1
  std::unique_ptr<uint8_t[]> next_replaced_;              // per bucket, under its lock
  mutable std::unique_ptr<BucketLock[]> locks_;
  std::unique_ptr<std::atomic<bool>[]> chunk_ready_;
  std::atomic<bool> stop_zeroing_{false};
  std::thread zeroer_;
};

}  // namespace ember::embedding
