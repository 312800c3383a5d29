// EmbeddingTable: one table's rows on one parameter server, with pull (read, creating missing
// rows) and push (apply gradients through the table's optimizer).
//
// Rows are spread over the table's virtual partitions, each with its own RowStore (so a partition
// can be copied out or dropped on its own). Partitions are guarded by lock stripes (partition p by
// stripe p % stripes): there is no table-wide lock, and a request's keys are grouped by stripe so
// that each stripe's lock is taken once per request and the index entries and rows of its keys are
// prefetched well ahead of use, which is what bounds a lookup on a table far larger than the
// caches. A missing row is created on first touch (pull or push) from the table's deterministic
// initializer, so its value does not depend on which server or partition layout creates it. Each
// row is stored as dim weights followed by the optimizer's state.
//
// Thread-safety: every method may be called from many threads at once. Duplicate keys in one push
// are applied in the order they appear. Callbacks of the ForEach* methods run under a stripe lock
// and must not call back into the table.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/status.h"
#include "common/table_spec.h"
#include "embedding/optimizer.h"
#include "embedding/row_store.h"

namespace ember::embedding {

class EmbeddingTable {
 public:
  using RowVisitor = std::function<void(uint64_t key, std::span<const float> row,
                                        std::span<const float> state)>;

  // `spec` must pass ValidateTableSpec and num_partitions must be at least 1 (checked: a
  // violation aborts; validate specs from configs and peers first).
  EmbeddingTable(const TableSpec& spec, uint32_t num_partitions);
  EmbeddingTable(const EmbeddingTable&) = delete;
  EmbeddingTable& operator=(const EmbeddingTable&) = delete;

  const TableSpec& spec() const { return spec_; }
  uint32_t dim() const { return spec_.dim; }
  uint32_t num_partitions() const { return num_partitions_; }
  // Optimizer state floats stored per row.
  uint32_t state_floats() const { return optimizer_.state_floats(); }
  // The partition of `key`: ember::PartitionOf(HashName(spec().name), key, num_partitions()).
  uint32_t PartitionOf(uint64_t key) const;

  // Copies the rows of `keys` into `out` (keys.size() * dim floats, row after row), creating
  // missing rows. InvalidArgument when out has the wrong size.
  Status Pull(std::span<const uint64_t> keys, std::span<float> out);
  // Applies grads (keys.size() * dim floats, row after row) through the optimizer, creating
  // missing rows first. InvalidArgument when grads has the wrong size; nothing is applied then.
  Status Push(std::span<const uint64_t> keys, std::span<const float> grads);

  // Rows held, over all partitions.
  uint64_t rows() const { return rows_.load(std::memory_order_relaxed); }
  // Approximate memory held: rows with their state, plus the index, in bytes.
  uint64_t bytes() const;

  // Visits every row (partition by partition, each under its stripe's lock).
  void ForEachRow(const RowVisitor& visit) const;
  // Visits the rows of one partition (partition < num_partitions(), checked).
  void ForEachRowInPartition(uint32_t partition, const RowVisitor& visit) const;
  // Inserts or overwrites one row with its state, for checkpoint loading and migration.
  // InvalidArgument when row.size() != dim() or state.size() != state_floats().
  Status Restore(uint64_t key, std::span<const float> row, std::span<const float> state);
  // Drops every row of one partition (partition < num_partitions(), checked); returns how many.
  size_t Erase(uint32_t partition);

 private:
  // Cache-line aligned so that neighbouring stripes' locks do not share a line.
  struct alignas(64) Stripe {
    mutable std::mutex mu;
  };

  std::mutex& StripeLock(uint32_t partition) const { return stripes_[partition % num_stripes_].mu; }
  // The row of `key` in `partition` (whose stripe lock the caller holds), created when missing.
  float* FindOrCreateRow(uint32_t partition, uint64_t key);
  // Calls use(position, row) for every key of the request, creating missing rows, stripe by
  // stripe under the stripe's lock; rows are prefetched `prefetch_floats` floats deep.
  template <typename Use>
  void ForEachRequestRow(std::span<const uint64_t> keys, size_t prefetch_floats, Use&& use);

  const TableSpec spec_;
  const uint64_t table_id_;  // HashName(spec_.name)
  const RowOptimizer optimizer_;
  const uint32_t floats_per_row_;  // dim + state floats
  const uint32_t num_partitions_;
  const uint32_t num_stripes_;
  std::unique_ptr<Stripe[]> stripes_;
  std::vector<RowStore> stores_;  // one per partition, guarded by its stripe's lock
  std::atomic<uint64_t> rows_{0};
};

}  // namespace ember::embedding
