// ReplicaStore: the replica's tables, rounds applied at once, and its checkpoints.
#include "ps/replica/replica_store.h"

#include <filesystem>
#include <mutex>

#include "common/checkpoint_layout.h"
#include "common/file_io.h"
#include "common/quote_for_error.h"
#include "embedding/partition_file.h"
#include "embedding/table_config.h"

namespace ember::ps {
namespace {

// The replica keeps weights only: its tables are SGD tables (no optimizer state), every row
// stored (no admission), none expiring. Initial rows depend only on the initialiser and seed, so
// they stay the training cluster's.
TableSpec WeightsOnly(TableSpec spec) {
  spec.optimizer = OptimizerSpec{};
  spec.admit_after = 0;
  spec.ttl_seconds = 0;
  return spec;
}

}  // namespace

Result<std::unique_ptr<ReplicaStore>> ReplicaStore::Create(const std::vector<TableSpec>& tables,
                                                           uint32_t partitions) {
  if (partitions == 0) return InvalidArgument("replica: the cluster has no partitions");
  for (const TableSpec& spec : tables) {
    RETURN_IF_ERROR(embedding::ValidateTableSpec(spec).WithContext("replica"));
  }
  std::unique_ptr<ReplicaStore> store(new ReplicaStore(tables, partitions));
  for (const TableSpec& spec : tables) {
    store->tables_.emplace(spec.name, std::make_unique<embedding::EmbeddingTable>(
                                          WeightsOnly(spec), partitions));
  }
  return store;
}

Result<const TableSpec*> ReplicaStore::FindTable(const std::string& name) const {
  for (const TableSpec& spec : specs_) {
    if (spec.name == name) return &spec;
  }
  return NotFound("unknown table " + QuoteForError(name));
}

Status ReplicaStore::CheckRound(const std::vector<TableChanges>& round) const {
  for (const TableChanges& changes : round) {
    ASSIGN_OR_RETURN(const TableSpec* spec, FindTable(changes.table));
    if (changes.rows.size() != changes.keys.size() * spec->dim) {
      return InvalidArgument("replica: " + std::to_string(changes.rows.size()) +
                             " floats for " + std::to_string(changes.keys.size()) +
                             " rows of table " + QuoteForError(changes.table) + " (dim " +
                             std::to_string(spec->dim) + ")");
    }
  }
  return Status::Ok();
}

Status ReplicaStore::Apply(const std::vector<TableChanges>& round) {
  RETURN_IF_ERROR(CheckRound(round));
  std::unique_lock lock(mutex_);
  for (const TableChanges& changes : round) {
    embedding::EmbeddingTable& table = *tables_.at(changes.table);
    RETURN_IF_ERROR(table.RestoreRows(changes.keys, changes.rows));
    RETURN_IF_ERROR(table.EraseKeys(changes.deleted).status());
  }
  rounds_.fetch_add(1, std::memory_order_relaxed);
  return Status::Ok();
}

Status ReplicaStore::Lookup(const std::string& table, std::span<const uint64_t> keys,
                            std::span<float> out, MissingRows missing,
                            std::span<uint8_t> found) const {
  auto it = tables_.find(table);
  if (it == tables_.end()) return NotFound("unknown table " + QuoteForError(table));
  std::shared_lock lock(mutex_);
  return it->second->Lookup(keys, out, missing, found);
}

std::vector<TableStats> ReplicaStore::Stats() const {
  std::vector<TableStats> stats;
  for (const TableSpec& spec : specs_) {
    TableStats table;
    tables_.at(spec.name)->ReportStats(table);
    stats.push_back(table);
  }
  return stats;
}

Status ReplicaStore::Save(const std::string& dir) const {
  const std::string staging = dir + ".saving";
  std::error_code error;
  std::filesystem::remove_all(staging, error);
  RETURN_IF_ERROR(MakeDirectories(staging));
  Manifest manifest;
  manifest.partitions = partitions_;
  manifest.servers = 1;
  {
    std::shared_lock lock(mutex_);
    manifest.step = rounds();
    for (const TableSpec& spec : specs_) {
      manifest.tables.push_back(ManifestTable{spec.name, spec.dim});
      const embedding::EmbeddingTable& table = *tables_.at(spec.name);
      RETURN_IF_ERROR(MakeDirectories(
          std::filesystem::path(PartitionFilePath(staging, spec.name, 0)).parent_path()));
      for (uint32_t p = 0; p < partitions_; ++p) {
        RETURN_IF_ERROR(embedding::WritePartitionFile(
            table, p, PartitionFilePath(staging, spec.name, p), Flush::kNow));
      }
    }
  }
  RETURN_IF_ERROR(WriteManifest(staging, std::move(manifest)));
  // The new checkpoint takes the old one's place at once (a crash leaves one or the other).
  const std::string old = dir + ".old";
  std::filesystem::remove_all(old, error);
  if (std::filesystem::exists(dir)) std::filesystem::rename(dir, old, error);
  if (error) return Unavailable("replica: moving '" + dir + "' aside: " + error.message());
  std::filesystem::rename(staging, dir, error);
  if (error) return Unavailable("replica: renaming '" + staging + "': " + error.message());
  std::filesystem::remove_all(old, error);
  return Status::Ok();
}

Status ReplicaStore::Load(const std::string& dir) {
  ASSIGN_OR_RETURN(std::vector<ChainLink> chain, ReadCheckpointChain(dir, VerifyFiles::kYes));
  const Manifest& manifest = chain.back().manifest;
  if (manifest.partitions != partitions_) {
    return FailedPrecondition("replica: checkpoint '" + dir + "' has " +
                              std::to_string(manifest.partitions) +
                              " partitions, the cluster " + std::to_string(partitions_));
  }
  std::unique_lock lock(mutex_);
  for (const ManifestTable& listed : manifest.tables) {
    auto it = tables_.find(listed.name);
    if (it == tables_.end()) continue;  // a table the cluster no longer has
    embedding::EmbeddingTable& table = *it->second;
    for (uint32_t p = 0; p < partitions_; ++p) {
      ASSIGN_OR_RETURN(std::vector<std::string> files, PartitionChainFiles(chain, listed.name, p));
      ASSIGN_OR_RETURN(embedding::PartitionRows rows,
                       embedding::FoldPartitionFiles(files, nullptr, p));
      if (rows.dim != table.dim()) {
        return DataLoss("replica: checkpoint file '" + files.front() + "' holds rows of dim " +
                        std::to_string(rows.dim) + ", table " + QuoteForError(listed.name) +
                        " has dim " + std::to_string(table.dim()));
      }
      RETURN_IF_ERROR(table.Erase(p).status());
      const size_t stride = size_t{rows.dim} + rows.state_floats;
      for (size_t i = 0; i < rows.keys.size(); ++i) {
        RETURN_IF_ERROR(table.Restore(rows.keys[i], {rows.values.data() + i * stride, rows.dim},
                                      {}));
      }
    }
  }
  return Status::Ok();
}

}  // namespace ember::ps
