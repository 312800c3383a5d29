// Export of a checkpoint's tables as .npy files.
#include "ps/client/checkpoint_export.h"

#include <algorithm>
#include <numeric>

#include "common/file_io.h"
#include "common/npy.h"
#include "embedding/partition_file.h"
#include "common/checkpoint_layout.h"

namespace ember::ps {
namespace {

Status ExportTable(const std::vector<ChainLink>& chain, const ManifestTable& table,
                   const std::string& out_dir) {
  std::vector<uint64_t> keys;
  std::vector<float> rows;
  for (uint32_t p = 0; p < chain.back().manifest.partitions; ++p) {
    ASSIGN_OR_RETURN(std::vector<std::string> files, PartitionChainFiles(chain, table.name, p));
    const std::string& path = files.front();
    ASSIGN_OR_RETURN(embedding::PartitionRows part,
                     embedding::FoldPartitionFiles(files, nullptr, p));
    if (part.table != table.name || part.dim != table.dim) {
      return DataLoss("checkpoint file '" + path + "' holds table '" + part.table + "' of dim " +
                      std::to_string(part.dim) + ", the manifest says '" + table.name +
                      "' of dim " + std::to_string(table.dim));
    }
    const size_t stride = size_t{part.dim} + part.state_floats;
    for (size_t i = 0; i < part.keys.size(); ++i) {
      keys.push_back(part.keys[i]);
      rows.insert(rows.end(), part.values.begin() + i * stride,
                  part.values.begin() + i * stride + part.dim);
    }
  }
  std::vector<size_t> order(keys.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  std::vector<uint64_t> sorted_keys(keys.size());
  std::vector<float> sorted_rows(rows.size());
  for (size_t i = 0; i < order.size(); ++i) {
    sorted_keys[i] = keys[order[i]];
    std::copy_n(rows.begin() + order[i] * table.dim, table.dim,
                sorted_rows.begin() + i * table.dim);
  }
  const std::string base = out_dir + "/" + table.name;
  RETURN_IF_ERROR(WriteNpy(base + ".keys.npy", sorted_keys, {sorted_keys.size()}));
  return WriteNpy(base + ".rows.npy", sorted_rows, {sorted_keys.size(), table.dim});
}

}  // namespace

Status ExportCheckpointTables(const std::string& checkpoint_dir, const std::string& out_dir) {
  ASSIGN_OR_RETURN(std::vector<ChainLink> chain,
                   ReadCheckpointChain(checkpoint_dir, VerifyFiles::kYes));
  RETURN_IF_ERROR(MakeDirectories(out_dir));
  for (const ManifestTable& table : chain.back().manifest.tables) {
    RETURN_IF_ERROR(ExportTable(chain, table, out_dir));
  }
  return Status::Ok();
}

}  // namespace ember::ps
