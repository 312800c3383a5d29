// Partition files: one partition of one table (every row's key, weights and optimizer state) as
// a checkpoint file, and loading such a file back into a table.
//
// The file is a checksummed file (common/checksummed_file.h) of kind "EMBRPART" whose payload is
// the table name, a hash of its shape (name, dim, optimizer kind, state floats), the number of
// partitions of the cluster, the partition, dim, state floats, the row count n, then n uint64
// keys and n rows of dim + state float32 values. Because partitions are the unit, a checkpoint
// written by any number of servers loads into any other number (the partition count must match).
//
// Thread-safety: as the table's methods (writing reads the partition under its stripe lock, so
// pulls and pushes of other partitions go on meanwhile).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/checksummed_file.h"
#include "common/file_io.h"
#include "common/status.h"
#include "embedding/embedding_table.h"

namespace ember::embedding {

// The contents of one partition file.
struct PartitionRows {
  std::string table;
  uint64_t shape_hash = 0;
  uint32_t num_partitions = 0;
  uint32_t partition = 0;
  uint32_t dim = 0;
  uint32_t state_floats = 0;
  std::vector<uint64_t> keys;
  std::vector<float> values;  // keys.size() rows of dim weights then state_floats state
};

// The payload of a partition file, also what a partition move carries (one per table): appends
// the rows of `partition` of `table` to `out`; when `sorted_only` is given (ascending keys), only
// the rows of those keys that exist.
Status AppendPartitionRows(const EmbeddingTable& table, uint32_t partition,
                           const std::vector<uint64_t>* sorted_only, PayloadWriter& out);
// The keys of the rows of `partition` of `table`, ascending.
Result<std::vector<uint64_t>> PartitionKeys(const EmbeddingTable& table, uint32_t partition);
// Reads one such payload from `in`; DataLoss naming `where` when it is truncated.
Result<PartitionRows> TakePartitionRows(PayloadReader& in, const std::string& where);
// DataLoss naming `where` unless `rows` hold `partition` of a table shaped like `table`.
Status CheckPartitionRows(const EmbeddingTable& table, uint32_t partition,
                          const PartitionRows& rows, const std::string& where);
// Inserts or overwrites every row of `rows` (the partition's other rows stay).
Status RestorePartitionRows(EmbeddingTable& table, const PartitionRows& rows);

// Writes the rows of `partition` of `table` to `path` (atomically).
Status WritePartitionFile(const EmbeddingTable& table, uint32_t partition, const std::string& path,
                          Flush flush = Flush::kNow);
// Reads `path` and checks its checksum and counts; DataLoss or NotFound naming the file.
Result<PartitionRows> ReadPartitionFile(const std::string& path);
// ReadPartitionFile, and checks that it holds `partition` of a table shaped like `table`.
Result<PartitionRows> ReadPartitionFile(const EmbeddingTable& table, uint32_t partition,
                                        const std::string& path);
// Replaces the rows of `partition` with `rows` (Erase, then Restore each).
Status LoadPartitionRows(EmbeddingTable& table, uint32_t partition, const PartitionRows& rows);

}  // namespace ember::embedding
