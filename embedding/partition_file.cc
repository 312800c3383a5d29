// Partition files: layout and checks.
#include "embedding/partition_file.h"

#include <algorithm>

#include "common/checksummed_file.h"
#include "common/hash.h"

namespace ember::embedding {
namespace {

constexpr std::string_view kMagic = "EMBRPART";
constexpr uint32_t kVersion = 1;

uint64_t ShapeHash(const EmbeddingTable& table) {
  uint64_t hash = HashName(table.spec().name);
  hash = HashCombine(hash, table.dim());
  hash = HashCombine(hash, static_cast<uint64_t>(table.spec().optimizer.kind));
  return HashCombine(hash, table.state_floats());
}

}  // namespace

Status AppendPartitionRows(const EmbeddingTable& table, uint32_t partition,
                           const std::vector<uint64_t>* sorted_only, PayloadWriter& out) {
  std::vector<uint64_t> keys;
  std::vector<float> values;
  const bool all = sorted_only == nullptr;
  if (all || !sorted_only->empty()) {
    // A key outside [lowest, highest] is skipped without a search.
    const uint64_t lowest = all ? 0 : sorted_only->front();
    const uint64_t highest = all ? UINT64_MAX : sorted_only->back();
    RETURN_IF_ERROR(table.ForEachRowInPartition(
        partition, [&](uint64_t key, std::span<const float> row, std::span<const float> state) {
          if (key < lowest || key > highest) return;
          if (!all && !std::binary_search(sorted_only->begin(), sorted_only->end(), key)) return;
          keys.push_back(key);
          values.insert(values.end(), row.begin(), row.end());
          values.insert(values.end(), state.begin(), state.end());
        }));
  }
  out.PutString(table.spec().name);
  out.Put(ShapeHash(table));
  out.Put(table.num_partitions());
  out.Put(partition);
  out.Put(table.dim());
  out.Put(table.state_floats());
  out.Put<uint64_t>(keys.size());
  out.PutArray(std::span<const uint64_t>(keys));
  out.PutArray(std::span<const float>(values));
  return Status::Ok();
}

Result<std::vector<uint64_t>> PartitionKeys(const EmbeddingTable& table, uint32_t partition) {
  std::vector<uint64_t> keys;
  RETURN_IF_ERROR(table.ForEachRowInPartition(
      partition, [&](uint64_t key, std::span<const float>, std::span<const float>) {
        keys.push_back(key);
      }));
  std::sort(keys.begin(), keys.end());
  return keys;
}

Result<PartitionRows> TakePartitionRows(PayloadReader& in, const std::string& where) {
  PartitionRows rows;
  uint64_t count = 0;
  in.GetString(rows.table);
  in.Get(rows.shape_hash);
  in.Get(rows.num_partitions);
  in.Get(rows.partition);
  in.Get(rows.dim);
  in.Get(rows.state_floats);
  in.Get(count);
  if (!in.ok()) return DataLoss(where + " is corrupt: truncated header");
  const uint64_t floats_per_row = uint64_t{rows.dim} + rows.state_floats;
  const uint64_t row_bytes = sizeof(uint64_t) + floats_per_row * sizeof(float);  // < 2^35
  uint64_t rows_bytes = 0;
  if (__builtin_mul_overflow(count, row_bytes, &rows_bytes) || rows_bytes > in.remaining()) {
    return DataLoss(where + " is corrupt: " + std::to_string(count) + " rows of " +
                    std::to_string(row_bytes) + " bytes do not fit the " +
                    std::to_string(in.remaining()) + " bytes that follow the header");
  }
  rows.keys.resize(count);
  rows.values.resize(count * floats_per_row);
  in.GetArray(std::span(rows.keys));
  in.GetArray(std::span(rows.values));
  return rows;
}

Status CheckPartitionRows(const EmbeddingTable& table, uint32_t partition,
                          const PartitionRows& rows, const std::string& where) {
  auto mismatch = [&where](const std::string& what) {
    return DataLoss(where + " does not fit: " + what);
  };
  if (rows.table != table.spec().name || rows.shape_hash != ShapeHash(table) ||
      rows.dim != table.dim() || rows.state_floats != table.state_floats()) {
    return mismatch("it holds table '" + rows.table + "' with dim " + std::to_string(rows.dim) +
                    " and " + std::to_string(rows.state_floats) + " state floats, expected table '" +
                    table.spec().name + "' with dim " + std::to_string(table.dim()) + " and " +
                    std::to_string(table.state_floats()) + " and the same optimizer");
  }
  if (rows.num_partitions != table.num_partitions() || rows.partition != partition) {
    return mismatch("it holds partition " + std::to_string(rows.partition) + " of " +
                    std::to_string(rows.num_partitions) + ", expected partition " +
                    std::to_string(partition) + " of " + std::to_string(table.num_partitions()));
  }
  for (uint64_t key : rows.keys) {
    if (table.PartitionOf(key) != partition) {
      return mismatch("key " + std::to_string(key) + " is not in partition " +
                      std::to_string(partition));
    }
  }
  return Status::Ok();
}

Status WritePartitionFile(const EmbeddingTable& table, uint32_t partition,
                          const std::string& path, Flush flush) {
  PayloadWriter payload;
  RETURN_IF_ERROR(AppendPartitionRows(table, partition, nullptr, payload));
  return WriteChecksummedFile(path, kMagic, kVersion, payload.bytes(), flush);
}

Result<PartitionRows> ReadPartitionFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ReadChecksummedFile(path, kMagic, kVersion));
  PayloadReader in(bytes);
  const std::string where = "checkpoint file '" + path + "'";
  ASSIGN_OR_RETURN(PartitionRows rows, TakePartitionRows(in, where));
  if (in.remaining() != 0) {
    return DataLoss(where + " is corrupt: " + std::to_string(in.remaining()) +
                    " bytes after its rows");
  }
  return rows;
}

Result<PartitionRows> ReadPartitionFile(const EmbeddingTable& table, uint32_t partition,
                                        const std::string& path) {
  ASSIGN_OR_RETURN(PartitionRows rows, ReadPartitionFile(path));
  RETURN_IF_ERROR(CheckPartitionRows(table, partition, rows, "checkpoint file '" + path + "'"));
  return rows;
}

Status RestorePartitionRows(EmbeddingTable& table, const PartitionRows& rows) {
  const uint32_t dim = table.dim();
  const size_t floats_per_row = dim + table.state_floats();
  for (size_t i = 0; i < rows.keys.size(); ++i) {
    std::span<const float> values(rows.values.data() + i * floats_per_row, floats_per_row);
    RETURN_IF_ERROR(table.Restore(rows.keys[i], values.first(dim), values.subspan(dim)));
  }
  return Status::Ok();
}

Status LoadPartitionRows(EmbeddingTable& table, uint32_t partition, const PartitionRows& rows) {
  RETURN_IF_ERROR(table.Erase(partition).status());
  return RestorePartitionRows(table, rows);
}

}  // namespace ember::embedding
