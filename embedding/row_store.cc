// RowStore implementation: linear-probing index over chunked row storage.
#include "embedding/row_store.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "common/check.h"
#include "common/hash.h"
#include "embedding/slab_arena.h"

namespace ember::embedding {
namespace {

constexpr size_t kInitialIndexCapacity = 16;
constexpr size_t kMinRowsPerChunk = 16;

// Grow when more than 70% of the entries would be in use.
bool OverLoaded(size_t size, size_t capacity) { return size * 10 > capacity * 7; }

}  // namespace

RowStore::RowStore(uint32_t floats_per_row)
    : floats_per_row_(floats_per_row),
      max_rows_per_chunk_(
          std::max(kMinRowsPerChunk, kMaxChunkBytes / (size_t{floats_per_row} * sizeof(float)))) {
  EMBER_CHECK(floats_per_row > 0, "a row needs at least one float");
}

RowStore::~RowStore() { ReleaseMemory(); }

RowStore::RowStore(RowStore&& other) noexcept
    : floats_per_row_(other.floats_per_row_),
      size_(std::exchange(other.size_, 0)),
      index_(std::exchange(other.index_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      chunks_(std::exchange(other.chunks_, {})),
      chunk_floats_total_(std::exchange(other.chunk_floats_total_, 0)),
      rows_left_in_chunk_(std::exchange(other.rows_left_in_chunk_, 0)),
      next_row_(std::exchange(other.next_row_, nullptr)),
      free_rows_(std::exchange(other.free_rows_, {})),
      max_rows_per_chunk_(other.max_rows_per_chunk_) {
  PublishIndex();
  other.PublishIndex();
}

RowStore& RowStore::operator=(RowStore&& other) noexcept {
  if (this != &other) {
    ReleaseMemory();
    floats_per_row_ = other.floats_per_row_;
    size_ = std::exchange(other.size_, 0);
    index_ = std::exchange(other.index_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    chunks_ = std::exchange(other.chunks_, {});
    chunk_floats_total_ = std::exchange(other.chunk_floats_total_, 0);
    rows_left_in_chunk_ = std::exchange(other.rows_left_in_chunk_, 0);
    next_row_ = std::exchange(other.next_row_, nullptr);
    free_rows_ = std::exchange(other.free_rows_, {});
    max_rows_per_chunk_ = other.max_rows_per_chunk_;
    PublishIndex();
    other.PublishIndex();
  }
  return *this;
}

size_t RowStore::Probe(uint64_t key) const {
  const size_t mask = capacity_ - 1;
  size_t i = Mix64(key) & mask;
  while (index_[i].row != nullptr && index_[i].key != key) i = (i + 1) & mask;
  return i;
}

float* RowStore::Find(uint64_t key) {
  if (size_ == 0) return nullptr;
  return index_[Probe(key)].row;
}

const float* RowStore::Find(uint64_t key) const {
  if (size_ == 0) return nullptr;
  return index_[Probe(key)].row;
}

std::pair<float*, bool> RowStore::FindOrInsert(uint64_t key) {
  if (capacity_ != 0) {
    Entry& entry = index_[Probe(key)];
    if (entry.row != nullptr) return {entry.row, false};
  }
  if (capacity_ == 0 || OverLoaded(size_ + 1, capacity_)) GrowIndex();
  Entry& entry = index_[Probe(key)];
  entry.key = key;
  entry.row = AllocateRow();
  ++size_;
  return {entry.row, true};
}

bool RowStore::Erase(uint64_t key) {
  if (size_ == 0) return false;
  const size_t mask = capacity_ - 1;
  size_t hole = Probe(key);
  if (index_[hole].row == nullptr) return false;
  free_rows_.push_back(index_[hole].row);
  index_[hole] = Entry{};
  --size_;
  // Backward shift: move later entries of the probe run into the hole when their home slot does
  // not lie (cyclically) between the hole and their position, so every lookup still finds them.
  for (size_t i = (hole + 1) & mask; index_[i].row != nullptr; i = (i + 1) & mask) {
    const size_t home = Mix64(index_[i].key) & mask;
    const bool home_after_hole = ((i - home) & mask) < ((i - hole) & mask);
    if (home_after_hole) continue;
    index_[hole] = index_[i];
    index_[i] = Entry{};
    hole = i;
  }
  return true;
}

void RowStore::GrowIndex() {
  const size_t old_capacity = capacity_;
  Entry* old = index_;
  capacity_ = old_capacity == 0 ? kInitialIndexCapacity : old_capacity * 2;
  index_ = static_cast<Entry*>(SlabArena::Shared().Allocate(capacity_ * sizeof(Entry)));
  std::uninitialized_fill_n(index_, capacity_, Entry{});
  for (size_t i = 0; i < old_capacity; ++i) {
    if (old[i].row != nullptr) index_[Probe(old[i].key)] = old[i];
  }
  PublishIndex();
  SlabArena::Shared().Free(old, old_capacity * sizeof(Entry));
}

void RowStore::PublishIndex() {
  prefetch_index_.store(index_, std::memory_order_relaxed);
  prefetch_mask_.store(capacity_ == 0 ? 0 : capacity_ - 1, std::memory_order_relaxed);
}

float* RowStore::AllocateRow() {
  if (!free_rows_.empty()) {
    float* row = free_rows_.back();
    free_rows_.pop_back();
    return row;
  }
  if (rows_left_in_chunk_ == 0) {
    // Geometric growth: each chunk is about as large as all rows so far, within bounds, and
    // fills the whole arena block it gets.
    const size_t row_bytes = size_t{floats_per_row_} * sizeof(float);
    const size_t wanted = std::clamp(size_, kMinRowsPerChunk, max_rows_per_chunk_) * row_bytes;
    const size_t bytes = SlabArena::BlockBytes(wanted) / row_bytes * row_bytes;
    chunks_.push_back(Chunk{static_cast<float*>(SlabArena::Shared().Allocate(bytes)), bytes});
    chunk_floats_total_ += bytes / sizeof(float);
    next_row_ = chunks_.back().rows;
    rows_left_in_chunk_ = bytes / row_bytes;
  }
  float* row = next_row_;
  next_row_ += floats_per_row_;
  --rows_left_in_chunk_;
  return row;
}

size_t RowStore::bytes() const {
  return chunk_floats_total_ * sizeof(float) + capacity_ * sizeof(Entry) +
         chunks_.capacity() * sizeof(chunks_[0]) + free_rows_.capacity() * sizeof(float*);
}

void RowStore::ReleaseMemory() {
  SlabArena& arena = SlabArena::Shared();
  arena.Free(index_, capacity_ * sizeof(Entry));
  for (const Chunk& chunk : chunks_) arena.Free(chunk.rows, chunk.bytes);
  index_ = nullptr;
  capacity_ = 0;
  PublishIndex();
  chunks_.clear();
}

void RowStore::Clear() {
  ReleaseMemory();
  chunks_ = std::vector<Chunk>();
  size_ = 0;
  chunk_floats_total_ = 0;
  rows_left_in_chunk_ = 0;
  next_row_ = nullptr;
  free_rows_ = std::vector<float*>();
}

}  // namespace ember::embedding
