// Compaction of a checkpoint chain into a new base.
#include "ps/client/checkpoint_compact.h"

#include <filesystem>
#include <random>

#include "common/file_io.h"
#include "embedding/partition_file.h"

namespace ember::ps {

std::string DefaultCompactionDir(const std::string& dir) {
  return std::filesystem::path(dir).lexically_normal().string() + ".base";
}

Result<Compaction> CompactCheckpoint(const std::string& dir, const std::string& out) {
  namespace fs = std::filesystem;
  ASSIGN_OR_RETURN(std::vector<ChainLink> chain, ReadCheckpointChain(dir, VerifyFiles::kYes));
  const ChainLink& tip = chain.back();
  const std::string target = fs::absolute(out).lexically_normal().string();
  std::error_code error;
  if (fs::exists(target, error)) {
    return FailedPrecondition("'" + target + "' exists; the folded base needs a new directory");
  }
  const std::string temporary = (fs::path(target).parent_path() /
                                 (".compact-" + std::to_string(std::random_device{}()) + "-" +
                                  fs::path(target).filename().string()))
                                    .string();
  auto fail = [&](const Status& status) {
    fs::remove_all(temporary, error);
    return status;
  };
  if (Status made = MakeDirectories(temporary); !made.ok()) return fail(made);
  for (const ManifestTable& table : tip.manifest.tables) {
    Status made = MakeDirectories(
        fs::path(PartitionFilePath(temporary, table.name, 0)).parent_path().string());
    if (!made.ok()) return fail(made);
    for (uint32_t p = 0; p < tip.manifest.partitions; ++p) {
      auto files = PartitionChainFiles(chain, table.name, p);
      if (!files.ok()) return fail(files.status());
      auto rows = embedding::FoldPartitionFiles(*files, nullptr, p);
      if (!rows.ok()) return fail(rows.status());
      Status written = embedding::WritePartitionRowsFile(
          *rows, PartitionFilePath(temporary, table.name, p), Flush::kLater);
      if (!written.ok()) return fail(written);
    }
  }
  // The tip's other files (the trainers') come along as they are.
  for (const ManifestFile& file : tip.manifest.files) {
    if (file.path.rfind("tables/", 0) == 0) continue;
    const fs::path to = fs::path(temporary) / file.path;
    fs::create_directories(to.parent_path(), error);
    if (!error) fs::copy_file(fs::path(tip.dir) / file.path, to, error);
    if (error) {
      return fail(Unavailable("cannot copy '" + tip.dir + "/" + file.path + "': " +
                              error.message()));
    }
  }
  if (Status synced = SyncFilesystemOf(temporary); !synced.ok()) return fail(synced);
  Manifest base = tip.manifest;
  base.chain = ChainPlace{.cut = tip.manifest.chain.cut};
  if (Status written = WriteManifest(temporary, base); !written.ok()) return fail(written);
  fs::rename(temporary, target, error);
  if (error) {
    return fail(Unavailable("cannot move the folded base into '" + target + "': " +
                            error.message()));
  }
  ASSIGN_OR_RETURN(Manifest written, ReadManifest(target));
  Compaction compaction{target, static_cast<uint32_t>(chain.size()), base.step, 0};
  for (const ManifestFile& file : written.files) compaction.bytes += file.bytes;
  return compaction;
}

}  // namespace ember::ps
