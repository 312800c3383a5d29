// RowStore: the rows of one table partition, keyed by uint64 feature id.
//
// An open-addressing hash index (linear probing, power-of-two capacity, grown at 70% load) maps
// each key to a row of `floats_per_row` floats. Rows live in separately allocated chunks that
// never move, so a row pointer stays valid until Clear() or destruction, however much the index
// grows. Chunks grow geometrically up to kMaxChunkBytes, so a small partition costs little and a
// large one wastes at most one partly used chunk. The index and the chunks come from the shared
// SlabArena, on huge pages where the kernel has them.
// Every uint64 value is a valid key, 0 and UINT64_MAX included: an empty index entry is marked by
// a null row pointer, never by a reserved key. Erase() removes one row (backward-shift deletion, no
// tombstones) and keeps its floats for the next insert.
//
// Not thread-safe, except Prefetch: the owner (EmbeddingTable) serialises access with one mutex
// per partition, and may prefetch for a partition whose mutex it does not hold yet.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/hash.h"

namespace ember::embedding {

class RowStore {
 public:
  static constexpr size_t kMaxChunkBytes = size_t{256} << 10;

  explicit RowStore(uint32_t floats_per_row);
  ~RowStore();

  // A moved-from store is empty and usable.
  RowStore(RowStore&& other) noexcept;
  RowStore& operator=(RowStore&& other) noexcept;
  RowStore(const RowStore&) = delete;
  RowStore& operator=(const RowStore&) = delete;

  uint32_t floats_per_row() const { return floats_per_row_; }

  // The row of `key`, or nullptr when absent.
  float* Find(uint64_t key);
  const float* Find(uint64_t key) const;

  // The row of `key`, inserting it when absent. The bool is true for a new row, whose floats are
  // uninitialised: the caller must fill them.
  std::pair<float*, bool> FindOrInsert(uint64_t key);

  // Removes the row of `key`; false when absent. Other rows' pointers stay valid; the erased
  // row's floats are reused by a later insert.
  bool Erase(uint64_t key);

  // Starts loading the index entry where `key` is looked up first, ahead of a Find/FindOrInsert.
  // Safe concurrently with anything: it reads only the atomic copies of the index's address and
  // mask, and a prefetch of an address the index no longer has is harmless (it never faults).
  void Prefetch(uint64_t key) const {
    const Entry* index = prefetch_index_.load(std::memory_order_relaxed);
    const size_t mask = prefetch_mask_.load(std::memory_order_relaxed);
    if (index != nullptr) __builtin_prefetch(&index[Mix64(key) & mask]);
  }

  // Number of rows.
  size_t size() const { return size_; }
  // Memory held: row chunks, free rows and the index, in bytes.
  size_t bytes() const;

  // Calls fn(key, row) for every row, in index order (not insertion order).
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (size_t i = 0; i < capacity_; ++i) {
      if (index_[i].row != nullptr) fn(index_[i].key, index_[i].row);
    }
  }
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t i = 0; i < capacity_; ++i) {
      if (index_[i].row != nullptr) fn(index_[i].key, static_cast<const float*>(index_[i].row));
    }
  }

  // Drops every row and releases the memory.
  void Clear();

 private:
  struct Entry {
    uint64_t key = 0;
    float* row = nullptr;  // null: the entry is empty
  };
  struct Chunk {
    float* rows;
    size_t bytes;  // as asked of the arena
  };

  // Index of the entry holding `key`, or of the empty entry where it would go. Needs a non-empty
  // index.
  size_t Probe(uint64_t key) const;
  // Doubles the index (or creates it) and reinserts every entry.
  void GrowIndex();
  // Gives the index and the chunks back to the arena.
  void ReleaseMemory();
  // Publishes index_ and capacity_ to Prefetch.
  void PublishIndex();
  // Floats for one more row, from the current chunk or a new one.
  float* AllocateRow();

  uint32_t floats_per_row_;
  size_t size_ = 0;
  Entry* index_ = nullptr;
  size_t capacity_ = 0;  // entries of index_: zero or a power of two
  // Copies of index_ and capacity_ - 1 for Prefetch, which may run without the owner's lock.
  std::atomic<const Entry*> prefetch_index_{nullptr};
  std::atomic<size_t> prefetch_mask_{0};
  std::vector<Chunk> chunks_;
  size_t chunk_floats_total_ = 0;  // floats allocated over all chunks
  size_t rows_left_in_chunk_ = 0;  // free rows at the end of chunks_.back()
  float* next_row_ = nullptr;      // first free row of chunks_.back()
  std::vector<float*> free_rows_;  // rows of erased keys, reused first
  size_t max_rows_per_chunk_;
};

}  // namespace ember::embedding
