// RowStore implementation: linear-probing index over chunked row storage.
#include "embedding/row_store.h"

#include <algorithm>
#include <utility>

#include "common/check.h"
#include "common/hash.h"

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

RowStore::RowStore(RowStore&& other) noexcept
    : floats_per_row_(other.floats_per_row_),
      size_(std::exchange(other.size_, 0)),
      index_(std::exchange(other.index_, {})),
      chunks_(std::exchange(other.chunks_, {})),
      chunk_floats_total_(std::exchange(other.chunk_floats_total_, 0)),
      rows_left_in_chunk_(std::exchange(other.rows_left_in_chunk_, 0)),
      next_row_(std::exchange(other.next_row_, nullptr)),
      free_rows_(std::exchange(other.free_rows_, {})),
      max_rows_per_chunk_(other.max_rows_per_chunk_) {}

RowStore& RowStore::operator=(RowStore&& other) noexcept {
  if (this != &other) {
    floats_per_row_ = other.floats_per_row_;
    size_ = std::exchange(other.size_, 0);
    index_ = std::exchange(other.index_, {});
    chunks_ = std::exchange(other.chunks_, {});
    chunk_floats_total_ = std::exchange(other.chunk_floats_total_, 0);
    rows_left_in_chunk_ = std::exchange(other.rows_left_in_chunk_, 0);
    next_row_ = std::exchange(other.next_row_, nullptr);
    free_rows_ = std::exchange(other.free_rows_, {});
    max_rows_per_chunk_ = other.max_rows_per_chunk_;
  }
  return *this;
}

size_t RowStore::Probe(uint64_t key) const {
  const size_t mask = index_.size() - 1;
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
  if (!index_.empty()) {
    Entry& entry = index_[Probe(key)];
    if (entry.row != nullptr) return {entry.row, false};
  }
  if (index_.empty() || OverLoaded(size_ + 1, index_.size())) GrowIndex();
  Entry& entry = index_[Probe(key)];
  entry.key = key;
  entry.row = AllocateRow();
  ++size_;
  return {entry.row, true};
}

bool RowStore::Erase(uint64_t key) {
  if (size_ == 0) return false;
  const size_t mask = index_.size() - 1;
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
  const size_t capacity = index_.empty() ? kInitialIndexCapacity : index_.size() * 2;
  std::vector<Entry> old = std::exchange(index_, std::vector<Entry>(capacity));
  for (const Entry& entry : old) {
    if (entry.row != nullptr) index_[Probe(entry.key)] = entry;
  }
}

float* RowStore::AllocateRow() {
  if (!free_rows_.empty()) {
    float* row = free_rows_.back();
    free_rows_.pop_back();
    return row;
  }
  if (rows_left_in_chunk_ == 0) {
    // Geometric growth: each chunk is about as large as all rows so far, within bounds.
    const size_t rows = std::clamp(size_, kMinRowsPerChunk, max_rows_per_chunk_);
    const size_t floats = rows * floats_per_row_;
    chunks_.push_back(std::make_unique_for_overwrite<float[]>(floats));
    chunk_floats_total_ += floats;
    next_row_ = chunks_.back().get();
    rows_left_in_chunk_ = rows;
  }
  float* row = next_row_;
  next_row_ += floats_per_row_;
  --rows_left_in_chunk_;
  return row;
}

size_t RowStore::bytes() const {
  return chunk_floats_total_ * sizeof(float) + index_.capacity() * sizeof(Entry) +
         chunks_.capacity() * sizeof(chunks_[0]) + free_rows_.capacity() * sizeof(float*);
}

void RowStore::Clear() {
  index_ = std::vector<Entry>();
  chunks_ = std::vector<std::unique_ptr<float[]>>();
  size_ = 0;
  chunk_floats_total_ = 0;
  rows_left_in_chunk_ = 0;
  next_row_ = nullptr;
  free_rows_ = std::vector<float*>();
}

}  // namespace ember::embedding
