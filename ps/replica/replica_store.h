// ReplicaStore: a serving replica's copy of a training cluster's tables, weights only.
//
// Rows arrive in rounds (ReplicaFeed: the changes every training server streamed since the last
// round) and a round is applied at once: a lookup sees all of it or none of it. A key without a
// row is looked up as the training servers would answer it (the table's initial row for the key,
// computed from the same initialiser and seed, or zeros with MissingRows::kFlag).
//
// The rows are saved as a checkpoint (the layout of common/checkpoint_layout.h, one partition file
// per table and partition, no optimizer state) and loaded from one: the replica's own data
// directory after a restart, or a training checkpoint (whose optimizer state is dropped).
//
// Thread-safety: every method may be called from any thread; Apply excludes lookups.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "common/missing_rows.h"
#include "common/status.h"
#include "common/table_stats.h"
#include "common/table_spec.h"
#include "embedding/embedding_table.h"

namespace ember::ps {

// One table's changes in a round.
struct TableChanges {
  std::string table;
  std::vector<uint64_t> keys;
  std::vector<float> rows;  // keys.size() * dim
  std::vector<uint64_t> deleted;
};

class ReplicaStore {
 public:
  // The tables as the training cluster defines them, `partitions` as its routing table has.
  static Result<std::unique_ptr<ReplicaStore>> Create(const std::vector<TableSpec>& tables,
                                                      uint32_t partitions);

  // The training cluster's specs (what lookups' initial rows come from).
  const std::vector<TableSpec>& tables() const { return specs_; }
  uint32_t num_partitions() const { return partitions_; }
  Result<const TableSpec*> FindTable(const std::string& name) const;

  // Applies one round: every table's rows written, its deleted keys erased. InvalidArgument (and
  // nothing applied) when a table is unknown or rows are not whole rows of its dim.
  Status Apply(const std::vector<TableChanges>& round);
  // Reads rows as EmbeddingTable::Lookup does.
  Status Lookup(const std::string& table, std::span<const uint64_t> keys, std::span<float> out,
                MissingRows missing, std::span<uint8_t> found) const;

  // Writes every row into `dir` as a checkpoint (replacing one there), `step` = rounds applied.
  Status Save(const std::string& dir) const;
  // Replaces every row with those of the checkpoint (or chain) in `dir`: the replica's own, or a
  // training checkpoint with the same tables and partition count (its optimizer state dropped).
  Status Load(const std::string& dir);

  uint64_t rounds() const { return rounds_.load(std::memory_order_relaxed); }
  // Each table's figures (rows, bytes), as a server reports them.
  std::vector<TableStats> Stats() const;

 private:
  ReplicaStore(std::vector<TableSpec> specs, uint32_t partitions)
      : specs_(std::move(specs)), partitions_(partitions) {}
  Status CheckRound(const std::vector<TableChanges>& round) const;

  const std::vector<TableSpec> specs_;
  const uint32_t partitions_;
  std::map<std::string, std::unique_ptr<embedding::EmbeddingTable>> tables_;
  mutable std::shared_mutex mutex_;  // shared: lookups, saving; exclusive: a round, a load
  std::atomic<uint64_t> rounds_{0};
};

}  // namespace ember::ps
