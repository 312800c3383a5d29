// Partition files: layout and checks.
#include "embedding/partition_file.h"

#include <algorithm>
#include <unordered_map>

#include "common/checksummed_file.h"
#include "common/hash.h"

namespace ember::embedding {
namespace {

constexpr std::string_view kMagic = "EMBRPART";
constexpr std::string_view kDeltaMagic = "EMBRDELT";
constexpr uint32_t kVersion = 1;

uint64_t ShapeHash(const EmbeddingTable& table) {
  uint64_t hash = HashName(table.spec().name);
  hash = HashCombine(hash, table.dim());
  hash = HashCombine(hash, static_cast<uint64_t>(table.spec().optimizer.kind));
  return HashCombine(hash, table.state_floats());
}

}  // namespace

PartitionRows EmptyPartitionRows(const EmbeddingTable& table, uint32_t partition) {
  PartitionRows rows;
  rows.table = table.spec().name;
  rows.shape_hash = ShapeHash(table);
  rows.num_partitions = table.num_partitions();
  rows.partition = partition;
  rows.dim = table.dim();
  rows.state_floats = table.state_floats();
  return rows;
}

void PutPartitionRows(const PartitionRows& rows, PayloadWriter& out) {
  out.PutString(rows.table);
  out.Put(rows.shape_hash);
  out.Put(rows.num_partitions);
  out.Put(rows.partition);
  out.Put(rows.dim);
  out.Put(rows.state_floats);
  out.Put<uint64_t>(rows.keys.size());
  out.PutArray(std::span<const uint64_t>(rows.keys));
  out.PutArray(std::span<const float>(rows.values));
}

Status AppendPartitionRows(const EmbeddingTable& table, uint32_t partition,
                           const std::vector<uint64_t>* sorted_only, PayloadWriter& out) {
  PartitionRows rows = EmptyPartitionRows(table, partition);
  const bool all = sorted_only == nullptr;
  if (all || !sorted_only->empty()) {
    // A key outside [lowest, highest] is skipped without a search.
    const uint64_t lowest = all ? 0 : sorted_only->front();
    const uint64_t highest = all ? UINT64_MAX : sorted_only->back();
    RETURN_IF_ERROR(table.ForEachRowInPartition(
        partition, [&](uint64_t key, std::span<const float> row, std::span<const float> state) {
          if (key < lowest || key > highest) return;
          if (!all && !std::binary_search(sorted_only->begin(), sorted_only->end(), key)) return;
          rows.keys.push_back(key);
          rows.values.insert(rows.values.end(), row.begin(), row.end());
          rows.values.insert(rows.values.end(), state.begin(), state.end());
        }));
  }
  PutPartitionRows(rows, out);
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

namespace {

// DataLoss naming `where` unless `rows` hold `partition` of the shape `expected` has.
Status CheckShape(const PartitionRows& expected, uint32_t partition, const PartitionRows& rows,
                  const std::string& where) {
  auto mismatch = [&where](const std::string& what) {
    return DataLoss(where + " does not fit: " + what);
  };
  if (rows.table != expected.table || rows.shape_hash != expected.shape_hash ||
      rows.dim != expected.dim || rows.state_floats != expected.state_floats) {
    return mismatch("it holds table '" + rows.table + "' with dim " + std::to_string(rows.dim) +
                    " and " + std::to_string(rows.state_floats) + " state floats, expected table '" +
                    expected.table + "' with dim " + std::to_string(expected.dim) + " and " +
                    std::to_string(expected.state_floats) + " and the same optimizer");
  }
  if (rows.num_partitions != expected.num_partitions || rows.partition != partition) {
    return mismatch("it holds partition " + std::to_string(rows.partition) + " of " +
                    std::to_string(rows.num_partitions) + ", expected partition " +
                    std::to_string(partition) + " of " + std::to_string(expected.num_partitions));
  }
  return Status::Ok();
}

}  // namespace

Status CheckPartitionRows(const EmbeddingTable& table, uint32_t partition,
                          const PartitionRows& rows, const std::string& where) {
  RETURN_IF_ERROR(CheckShape(EmptyPartitionRows(table, partition), partition, rows, where));
  for (uint64_t key : rows.keys) {
    if (table.PartitionOf(key) != partition) {
      return DataLoss(where + " does not fit: key " + std::to_string(key) +
                      " is not in partition " + std::to_string(partition));
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

Result<PartitionCut> WritePartitionCut(EmbeddingTable& table, uint32_t partition, uint64_t previous,
                                       uint64_t cut, bool track, const std::string& whole_path,
                                       const std::string& delta_path, Flush flush) {
  PartitionRows rows = EmptyPartitionRows(table, partition);
  ASSIGN_OR_RETURN(
      PartitionCut written,
      table.CutPartition(partition, previous, cut, track,
                         [&](uint64_t key, std::span<const float> row,
                             std::span<const float> state) {
                           rows.keys.push_back(key);
                           rows.values.insert(rows.values.end(), row.begin(), row.end());
                           rows.values.insert(rows.values.end(), state.begin(), state.end());
                         }));
  PayloadWriter payload;
  PutPartitionRows(rows, payload);
  if (written.whole) {
    RETURN_IF_ERROR(WriteChecksummedFile(whole_path, kMagic, kVersion, payload.bytes(), flush));
  } else {
    payload.Put<uint64_t>(written.deleted.size());
    payload.PutArray(std::span<const uint64_t>(written.deleted));
    RETURN_IF_ERROR(
        WriteChecksummedFile(delta_path, kDeltaMagic, kVersion, payload.bytes(), flush));
  }
  return written;
}

Result<PartitionDelta> ReadDeltaFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ReadChecksummedFile(path, kDeltaMagic, kVersion));
  PayloadReader in(bytes);
  const std::string where = "checkpoint file '" + path + "'";
  PartitionDelta delta;
  ASSIGN_OR_RETURN(delta.rows, TakePartitionRows(in, where));
  uint64_t deleted = 0;
  if (!in.Get(deleted)) return DataLoss(where + " is corrupt: truncated before its deleted keys");
  if (deleted > in.remaining() / sizeof(uint64_t) ||
      deleted * sizeof(uint64_t) != in.remaining()) {
    return DataLoss(where + " is corrupt: " + std::to_string(deleted) + " deleted keys for the " +
                    std::to_string(in.remaining()) + " bytes that follow");
  }
  delta.deleted.resize(deleted);
  in.GetArray(std::span(delta.deleted));
  return delta;
}

Result<PartitionDelta> ReadDeltaFile(const EmbeddingTable& table, uint32_t partition,
                                     const std::string& path) {
  ASSIGN_OR_RETURN(PartitionDelta delta, ReadDeltaFile(path));
  const std::string where = "checkpoint file '" + path + "'";
  RETURN_IF_ERROR(CheckPartitionRows(table, partition, delta.rows, where));
  for (uint64_t key : delta.deleted) {
    if (table.PartitionOf(key) != partition) {
      return DataLoss(where + " does not fit: deleted key " + std::to_string(key) +
                      " is not in partition " + std::to_string(partition));
    }
  }
  return delta;
}

Status WritePartitionRowsFile(const PartitionRows& rows, const std::string& path, Flush flush) {
  PayloadWriter payload;
  PutPartitionRows(rows, payload);
  return WriteChecksummedFile(path, kMagic, kVersion, payload.bytes(), flush);
}

namespace {

// A partition's rows with deltas folded in one after another: the index of its keys is built once
// for the whole chain, and deleted rows are dropped once at the end.
class RowFold {
 public:
  explicit RowFold(PartitionRows& rows)
      : rows_(rows), floats_per_row_(size_t{rows.dim} + rows.state_floats) {
    index_.reserve(rows_.keys.size());
    for (size_t i = 0; i < rows_.keys.size(); ++i) index_.emplace(rows_.keys[i], i);
  }

  Status Apply(const PartitionDelta& delta, const std::string& where) {
    RETURN_IF_ERROR(CheckShape(rows_, rows_.partition, delta.rows, where));
    for (size_t i = 0; i < delta.rows.keys.size(); ++i) {
      const float* source = delta.rows.values.data() + i * floats_per_row_;
      auto [at, inserted] = index_.emplace(delta.rows.keys[i], rows_.keys.size());
      if (inserted) {
        rows_.keys.push_back(delta.rows.keys[i]);
        rows_.values.insert(rows_.values.end(), source, source + floats_per_row_);
      } else {
        std::copy_n(source, floats_per_row_, rows_.values.data() + at->second * floats_per_row_);
      }
    }
    for (uint64_t key : delta.deleted) {
      if (auto at = index_.find(key); at != index_.end()) {
        gone_.push_back(at->second);
        index_.erase(at);
      }
    }
    return Status::Ok();
  }

  // Drops the deleted rows from `rows` (the order of the others stays).
  void Finish() {
    if (gone_.empty()) return;
    std::vector<uint8_t> dropped(rows_.keys.size(), 0);
    for (size_t at : gone_) dropped[at] = 1;
    size_t kept = 0;
    for (size_t i = 0; i < rows_.keys.size(); ++i) {
      if (dropped[i]) continue;
      if (kept != i) {
        rows_.keys[kept] = rows_.keys[i];
        std::copy_n(rows_.values.data() + i * floats_per_row_, floats_per_row_,
                    rows_.values.data() + kept * floats_per_row_);
      }
      ++kept;
    }
    rows_.keys.resize(kept);
    rows_.values.resize(kept * floats_per_row_);
  }

 private:
  PartitionRows& rows_;
  const size_t floats_per_row_;
  std::unordered_map<uint64_t, size_t> index_;
  std::vector<size_t> gone_;  // positions of deleted rows
};

}  // namespace

Status ApplyPartitionDelta(PartitionRows& rows, const PartitionDelta& delta,
                           const std::string& where) {
  RowFold fold(rows);
  RETURN_IF_ERROR(fold.Apply(delta, where));
  fold.Finish();
  return Status::Ok();
}

Result<PartitionRows> FoldPartitionFiles(std::span<const std::string> files,
                                         const EmbeddingTable* table, uint32_t partition) {
  if (files.empty()) {
    return InvalidArgument("no file to restore partition " + std::to_string(partition));
  }
  ASSIGN_OR_RETURN(PartitionRows rows, table != nullptr
                                           ? ReadPartitionFile(*table, partition, files[0])
                                           : ReadPartitionFile(files[0]));
  RowFold fold(rows);
  for (size_t i = 1; i < files.size(); ++i) {
    ASSIGN_OR_RETURN(PartitionDelta delta, table != nullptr
                                               ? ReadDeltaFile(*table, partition, files[i])
                                               : ReadDeltaFile(files[i]));
    RETURN_IF_ERROR(fold.Apply(delta, "checkpoint file '" + files[i] + "'"));
  }
  fold.Finish();
  return rows;
}

Status LoadPartitionRows(EmbeddingTable& table, uint32_t partition, const PartitionRows& rows) {
  RETURN_IF_ERROR(table.Erase(partition).status());
  return RestorePartitionRows(table, rows);
}

}  // namespace ember::embedding
