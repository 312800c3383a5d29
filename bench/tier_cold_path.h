// The floor under the tier on this machine: what reading stored rows from RocksDB (from the page
// cache) and writing rows back cost in CPU, measured on the tiered table's own store without the
// table. `ember bench-tier` prints it beside the pull+push phase, with the least CPU per key that
// phase's reads and write-backs would cost even if nothing else in the tier cost anything.
#pragma once

#include <cstdint>
#include <string>

#include "bench/tier_file_path.h"
#include "common/status.h"
#include "embedding/embedding_table.h"
#include "embedding/rocks_store.h"

namespace ember::bench {

// Rows read in one MultiGet: about a request's misses, and about one stripe's share of them.
constexpr uint32_t kColdReadBatch = 256;
constexpr uint32_t kColdStripeReadBatch = 4;
// Rows written back in one batch, sorted by key (about what one request's eviction writes).
constexpr uint32_t kColdWriteBatch = 256;

struct ColdPathFigures {
  double read_us = 0;         // CPU per row read, in batches of kColdReadBatch
  double stripe_read_us = 0;  // the same in batches of kColdStripeReadBatch
  // CPU of the whole process per row written (RocksDB's log, memtable, and the flushes and
  // compactions that ran meanwhile), in batches of kColdWriteBatch.
  double write_us = 0;
};

// Reads random stored rows (keys 0..rows-1, in `shape`'s partitions) for `seconds` per batch
// size, then writes some of them back unchanged for `seconds`: the stored values do not change.
// No request may run on the table meanwhile.
Result<ColdPathFigures> MeasureColdPath(uint64_t rows, embedding::RocksTable& disk,
                                        const embedding::EmbeddingTable& shape, double seconds);

// The least CPU per key of a phase whose keys cost `memory_ns` in memory, plus `reads` rows read
// per key at `read_us` each and `writes` rows written at `write_us` each, in ns.
// The line `ember bench-tier` prints of RocksDB's cold path and a plain file's.
std::string ColdPathLine(const ColdPathFigures& cold, const FilePathFigures& file);

double ColdPathFloorNs(double memory_ns, double reads, double read_us, double writes,
                       double write_us);

}  // namespace ember::bench
