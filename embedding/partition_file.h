// Partition files: one partition of one table (every row's key, weights and optimizer state) as
// a checkpoint file, and loading such a file back into a table.
//
// The file is a checksummed file (common/checksummed_file.h) of kind "EMBRPART" whose payload is
// the table name, a hash of its shape (name, dim, optimizer kind, state floats), the number of
// partitions of the cluster, the partition, dim, state floats, the row count n, then n uint64
// keys and n rows of dim + state float32 values. Because partitions are the unit, a checkpoint
// written by any number of servers loads into any other number (the partition count must match).
//
// An incremental checkpoint cut writes a delta file (kind "EMBRDELT") for a partition whose changes
// since the previous cut are known: the same payload holding only the rows changed since, then the
// count and the keys of the rows deleted since. Restoring applies a partition's whole file, then
// each later delta in order (ApplyPartitionDelta).
//
// Thread-safety: as the table's methods (writing reads the partition under its stripe lock, so
// pulls and pushes of other partitions go on meanwhile).
#pragma once

#include <cstdint>
#include <span>
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

// The rows of a partition changed since an earlier cut, and the keys deleted since.
struct PartitionDelta {
  PartitionRows rows;
  std::vector<uint64_t> deleted;
};

// The payload of `rows` (as AppendPartitionRows writes it).
void PutPartitionRows(const PartitionRows& rows, PayloadWriter& out);
// The header fields of `rows` for `partition` of `table`, with no rows yet.
PartitionRows EmptyPartitionRows(const EmbeddingTable& table, uint32_t partition);

// Writes the rows of `partition` of `table` to `path` (atomically).
Status WritePartitionFile(const EmbeddingTable& table, uint32_t partition, const std::string& path,
                          Flush flush = Flush::kNow);
// Reads `path` and checks its checksum and counts; DataLoss or NotFound naming the file.
Result<PartitionRows> ReadPartitionFile(const std::string& path);
// ReadPartitionFile, and checks that it holds `partition` of a table shaped like `table`.
Result<PartitionRows> ReadPartitionFile(const EmbeddingTable& table, uint32_t partition,
                                        const std::string& path);
// Writes `partition` of `table` for checkpoint cut `cut` taken after `previous`
// (EmbeddingTable::CutPartition): to `whole_path` as a partition file when the cut holds the whole
// partition, else to `delta_path` as a delta file. Returns what the cut held.
Result<PartitionCut> WritePartitionCut(EmbeddingTable& table, uint32_t partition, uint64_t previous,
                                       uint64_t cut, bool track, const std::string& whole_path,
                                       const std::string& delta_path, Flush flush = Flush::kNow);
// Reads a delta file and checks its checksum and counts; DataLoss or NotFound naming the file.
Result<PartitionDelta> ReadDeltaFile(const std::string& path);
// ReadDeltaFile, and checks that it holds `partition` of a table shaped like `table`.
Result<PartitionDelta> ReadDeltaFile(const EmbeddingTable& table, uint32_t partition,
                                     const std::string& path);
// Writes `rows` as a partition file to `path` (atomically): a partition folded from a chain.
Status WritePartitionRowsFile(const PartitionRows& rows, const std::string& path,
                              Flush flush = Flush::kNow);
// Applies `delta` to `rows` (its rows inserted or overwritten, its deleted keys removed); DataLoss
// naming `where` when the delta holds another table, shape or partition than `rows`.
Status ApplyPartitionDelta(PartitionRows& rows, const PartitionDelta& delta,
                           const std::string& where);

// Reads the files that restore one partition (its newest whole file, then the delta files after
// it: PartitionChainFiles in common/checkpoint_layout.h) and folds them into the partition's rows.
// With `table`, checks that each file holds `partition` of a table shaped like it; without, that
// the deltas fit the whole file. DataLoss or NotFound naming the file.
Result<PartitionRows> FoldPartitionFiles(std::span<const std::string> files,
                                         const EmbeddingTable* table, uint32_t partition);

// Replaces the rows of `partition` with `rows` (Erase, then Restore each).
Status LoadPartitionRows(EmbeddingTable& table, uint32_t partition, const PartitionRows& rows);

}  // namespace ember::embedding
