// ShardCheckpoints: writing and loading the checkpoint files of the partitions a server owns.
#include "ps/server/shard_checkpoints.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "common/checkpoint_layout.h"
#include "common/file_io.h"
#include "common/progress_meter.h"
#include "common/quote_for_error.h"
#include "embedding/partition_file.h"

namespace ember::ps {
namespace {

// A meter of one checkpoint phase over a server's partition files (one per table and partition).
ProgressOptions CheckpointProgress(uint32_t server_id, const std::string& phase, uint64_t files) {
  return {.label = "server " + std::to_string(server_id) + ": " + phase + " checkpoint",
          .unit = "partition files",
          .total = files};
}

}  // namespace

Status ShardCheckpoints::Run(const wire::CheckpointRequest& checkpoint) {
  if (!IsAbsoluteNormalPath(checkpoint.dir)) {
    return InvalidArgument("checkpoint directory " + QuoteForError(checkpoint.dir, kMaxQuotedPath) +
                           " is not an absolute path in normal form (no '.', '..' or "
                           "empty components)");
  }
  Status done;
  const char* what = "";
  switch (checkpoint.action) {
    case wire::CheckpointAction::kWrite:
      done = Write(checkpoint.dir,
                   CutWrite{checkpoint.cut, checkpoint.previous_cut, checkpoint.track});
      what = "writing";
      break;
    case wire::CheckpointAction::kVerify:
      done = Verify(checkpoint.dir);
      what = "verifying";
      break;
    case wire::CheckpointAction::kRestore:
      done = Restore(checkpoint.dir);
      what = "restoring";
      break;
  }
  if (!done.ok()) {
    spdlog::warn("server {}: {} checkpoint '{}' failed: {}", server_id_, what, checkpoint.dir,
                 done.ToString());
    return done;
  }
  spdlog::info("server {}: done {} checkpoint '{}'", server_id_, what, checkpoint.dir);
  return Status::Ok();
}

Status ShardCheckpoints::Write(const std::string& dir, const CutWrite& write) {
  ProgressMeter meter(
      CheckpointProgress(server_id_, "writing", tables_.size() * ownership_.served_count()));
  uint64_t deltas = 0;
  for (const auto& [name, table] : tables_) {
    RETURN_IF_ERROR(MakeDirectories(
        std::filesystem::path(PartitionFilePath(dir, name, 0)).parent_path().string()));
    for (uint32_t p = 0; p < ownership_.size(); ++p) {
      if (!ownership_.serves(p)) continue;
      if (write.cut == 0) {
        // A full checkpoint outside any chain: nothing to track from.
        RETURN_IF_ERROR(embedding::WritePartitionFile(*table, p, PartitionFilePath(dir, name, p),
                                                      Flush::kLater));
      } else {
        ASSIGN_OR_RETURN(embedding::PartitionCut written,
                         embedding::WritePartitionCut(
                             *table, p, write.previous_cut, write.cut, write.track,
                             PartitionFilePath(dir, name, p), DeltaFilePath(dir, name, p),
                             Flush::kLater));
        if (!written.whole) ++deltas;
      }
      meter.Add(1);
    }
  }
  if (write.cut != 0) {
    spdlog::info("server {}: cut {:016x} wrote {} of {} partition files as deltas", server_id_,
                 write.cut, deltas, tables_.size() * ownership_.served_count());
  }
  // One flush for every file: each partition flushed on its own took 12x longer (6144 files of
  // tt-bench). The manifest, written after every server answered, vouches only for flushed files.
  return SyncFilesystemOf(dir);
}

namespace {

// Where a server restores its partitions from: the chain that ends at `dir` when it holds a
// manifest, else (a directory of partition files alone, as servers write them before the
// manifest) the whole files in it.
class RestoreSource {
 public:
  static Result<RestoreSource> Of(const std::string& dir) {
    RestoreSource source;
    source.dir_ = dir;
    if (std::filesystem::exists(dir + "/" + kManifestName)) {
      ASSIGN_OR_RETURN(source.chain_, ReadCheckpointChain(dir, VerifyFiles::kNo));
    }
    return source;
  }
  // The cut the restored rows are as of (0: none to track changes from).
  uint64_t cut() const { return chain_.empty() ? 0 : chain_.back().manifest.chain.cut; }
  Result<std::vector<std::string>> Files(const std::string& table, uint32_t partition) const {
    if (chain_.empty()) return std::vector<std::string>{PartitionFilePath(dir_, table, partition)};
    return PartitionChainFiles(chain_, table, partition);
  }

 private:
  std::string dir_;
  std::vector<ChainLink> chain_;
};

}  // namespace

Status ShardCheckpoints::Verify(const std::string& dir) {
  ASSIGN_OR_RETURN(const RestoreSource source, RestoreSource::Of(dir));
  ProgressMeter meter(
      CheckpointProgress(server_id_, "verifying", tables_.size() * ownership_.served_count()));
  for (const auto& [name, table] : tables_) {
    for (uint32_t p = 0; p < ownership_.size(); ++p) {
      if (!ownership_.serves(p)) continue;
      ASSIGN_OR_RETURN(std::vector<std::string> files, source.Files(name, p));
      RETURN_IF_ERROR(embedding::FoldPartitionFiles(files, table.get(), p).status());
      meter.Add(1);
    }
  }
  return Status::Ok();
}

Status ShardCheckpoints::Restore(const std::string& dir) {
  // Every file is verified before any row changes, so a bad file leaves the rows as they were.
  // Files are read again to load them, keeping one partition in memory at a time.
  RETURN_IF_ERROR(Verify(dir));
  ASSIGN_OR_RETURN(const RestoreSource source, RestoreSource::Of(dir));
  ProgressMeter meter(
      CheckpointProgress(server_id_, "loading", tables_.size() * ownership_.served_count()));
  for (const auto& [name, table] : tables_) {
    for (uint32_t p = 0; p < ownership_.size(); ++p) {
      if (!ownership_.serves(p)) continue;
      ASSIGN_OR_RETURN(std::vector<std::string> files, source.Files(name, p));
      ASSIGN_OR_RETURN(embedding::PartitionRows rows,
                       embedding::FoldPartitionFiles(files, table.get(), p));
      Status loaded = embedding::LoadPartitionRows(*table, p, rows);
      if (!loaded.ok()) {
        return loaded.WithContext("restore stopped partway through partition " + std::to_string(p) +
                                  " of table '" + name + "'; restore again before serving");
      }
      if (source.cut() != 0) table->TrackChangesFrom(p, source.cut());
      meter.Add(1);
    }
  }
  return Status::Ok();
}

}  // namespace ember::ps
