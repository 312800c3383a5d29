// EmbeddingTable implementation: per-partition locking over RowStores.
#include "embedding/embedding_table.h"

#include <algorithm>
#include <string>

#include "common/check.h"
#include "common/hash.h"
#include "embedding/initializer.h"
#include "embedding/table_config.h"

namespace ember::embedding {
namespace {

RowOptimizer MakeOptimizer(const TableSpec& spec) {
  Status valid = ValidateTableSpec(spec);
  EMBER_CHECK(valid.ok(), valid.ToString());
  Result<RowOptimizer> optimizer = RowOptimizer::Create(spec.optimizer, spec.dim);
  EMBER_CHECK(optimizer.ok(), optimizer.status().ToString());
  return *optimizer;
}

// Holds the lock of the partition of the key being processed, and keeps it across consecutive
// keys of the same partition.
class PartitionLock {
 public:
  void Switch(std::mutex& mu) {
    if (lock_.mutex() == &mu) return;
    if (lock_.owns_lock()) lock_.unlock();
    lock_ = std::unique_lock<std::mutex>(mu);
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace

EmbeddingTable::EmbeddingTable(const TableSpec& spec, uint32_t num_partitions)
    : spec_(spec),
      table_id_(HashName(spec.name)),
      optimizer_(MakeOptimizer(spec)),
      floats_per_row_(spec.dim + optimizer_.state_floats()) {
  EMBER_CHECK(num_partitions >= 1, "table", spec.name, "needs at least one partition");
  partitions_.reserve(num_partitions);
  for (uint32_t p = 0; p < num_partitions; ++p) {
    partitions_.push_back(std::make_unique<Partition>(floats_per_row_));
  }
}

uint32_t EmbeddingTable::PartitionOf(uint64_t key) const {
  return ember::PartitionOf(table_id_, key, num_partitions());
}

float* EmbeddingTable::FindOrCreateRow(Partition& partition, uint64_t key) {
  auto [row, inserted] = partition.store.FindOrInsert(key);
  if (inserted) {
    InitializeRow(spec_, key, std::span<float>(row, spec_.dim));
    optimizer_.InitState(std::span<float>(row + spec_.dim, optimizer_.state_floats()));
    rows_.fetch_add(1, std::memory_order_relaxed);
  }
  return row;
}

Status EmbeddingTable::Pull(std::span<const uint64_t> keys, std::span<float> out) {
  const size_t dim = spec_.dim;
  if (out.size() != keys.size() * dim) {
    return InvalidArgument("pull from table '" + spec_.name + "': " +
                           std::to_string(keys.size()) + " keys of dim " + std::to_string(dim) +
                           " need " + std::to_string(keys.size() * dim) + " floats, got " +
                           std::to_string(out.size()));
  }
  PartitionLock lock;
  for (size_t i = 0; i < keys.size(); ++i) {
    Partition& partition = *partitions_[PartitionOf(keys[i])];
    lock.Switch(partition.mu);
    const float* row = FindOrCreateRow(partition, keys[i]);
    std::copy_n(row, dim, out.data() + i * dim);
  }
  return Status::Ok();
}

Status EmbeddingTable::Push(std::span<const uint64_t> keys, std::span<const float> grads) {
  const size_t dim = spec_.dim;
  if (grads.size() != keys.size() * dim) {
    return InvalidArgument("push to table '" + spec_.name + "': " + std::to_string(keys.size()) +
                           " keys of dim " + std::to_string(dim) + " need " +
                           std::to_string(keys.size() * dim) + " gradient floats, got " +
                           std::to_string(grads.size()));
  }
  const uint32_t state_floats = optimizer_.state_floats();
  PartitionLock lock;
  for (size_t i = 0; i < keys.size(); ++i) {
    Partition& partition = *partitions_[PartitionOf(keys[i])];
    lock.Switch(partition.mu);
    float* row = FindOrCreateRow(partition, keys[i]);
    optimizer_.Apply(std::span<float>(row, dim), std::span<float>(row + dim, state_floats),
                     grads.subspan(i * dim, dim));
  }
  return Status::Ok();
}

uint64_t EmbeddingTable::bytes() const {
  uint64_t total = 0;
  for (const auto& partition : partitions_) {
    std::lock_guard<std::mutex> lock(partition->mu);
    total += partition->store.bytes();
  }
  return total + partitions_.size() * sizeof(Partition);
}

void EmbeddingTable::ForEachRowInPartition(uint32_t partition, const RowVisitor& visit) const {
  EMBER_CHECK(partition < partitions_.size(), "partition", partition, "of table", spec_.name,
              "out of range");
  const Partition& part = *partitions_[partition];
  const uint32_t dim = spec_.dim;
  const uint32_t state_floats = optimizer_.state_floats();
  std::lock_guard<std::mutex> lock(part.mu);
  part.store.ForEach([&](uint64_t key, const float* row) {
    visit(key, std::span<const float>(row, dim), std::span<const float>(row + dim, state_floats));
  });
}

void EmbeddingTable::ForEachRow(const RowVisitor& visit) const {
  for (uint32_t p = 0; p < num_partitions(); ++p) ForEachRowInPartition(p, visit);
}

Status EmbeddingTable::Restore(uint64_t key, std::span<const float> row,
                               std::span<const float> state) {
  if (row.size() != spec_.dim || state.size() != optimizer_.state_floats()) {
    return InvalidArgument("restore into table '" + spec_.name + "': row of " +
                           std::to_string(row.size()) + " floats and state of " +
                           std::to_string(state.size()) + " floats, want " +
                           std::to_string(spec_.dim) + " and " +
                           std::to_string(optimizer_.state_floats()));
  }
  Partition& partition = *partitions_[PartitionOf(key)];
  std::lock_guard<std::mutex> lock(partition.mu);
  auto [stored, inserted] = partition.store.FindOrInsert(key);
  if (inserted) rows_.fetch_add(1, std::memory_order_relaxed);
  std::copy(row.begin(), row.end(), stored);
  std::copy(state.begin(), state.end(), stored + spec_.dim);
  return Status::Ok();
}

size_t EmbeddingTable::Erase(uint32_t partition) {
  EMBER_CHECK(partition < partitions_.size(), "partition", partition, "of table", spec_.name,
              "out of range");
  Partition& part = *partitions_[partition];
  std::lock_guard<std::mutex> lock(part.mu);
  const size_t erased = part.store.size();
  part.store.Clear();
  rows_.fetch_sub(erased, std::memory_order_relaxed);
  return erased;
}

}  // namespace ember::embedding
