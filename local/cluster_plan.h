// ClusterPlan: how many parameter servers a table needs, and how much memory, disk and network,
// from ember's own row layout and from figures measured on ember (`ember plan`, docs/sizing.md).
//
// What is computed from the code's layout (memory: checked against real tables by a test):
//   a row in memory   (dim + optimizer state) float32 values, + 1 flags word in a tiered table
//   the hash index    16-byte entries, a power-of-two count per partition grown at 70% load
//                     (embedding/row_store.h), so 23 to 46 bytes a row by the partition's fill
//   row chunks        rows in chunks of at most 256 KiB per partition, the last one part used
//   a checkpoint row  8-byte key + the row's values (embedding/partition_file.h); moves carry
//                     the same payload
//   a row on disk     12-byte key + the row's values, times RocksDB's overhead (measured)
//   a key on the wire pull: 8-byte key out, dim values back; push: 8-byte key + dim gradients;
//                     values 4 bytes (f32) or 2 (f16); servers always store f32
// What is measured (the constants below, each with the command that measured it): resident
// memory over the table's own account, RocksDB's bytes over keys and values, server CPU
// per key pulled and pushed, the tier's slowdown, the partition move rate, and the time to reopen
// a data directory. docs/sizing.md shows the arithmetic and the measurements.
//
// Pure arithmetic: no I/O, thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "common/row_format.h"
#include "common/status.h"
#include "common/table_spec.h"

namespace ember::local {

// ---- Measured on ember (2-core development machine; docs/sizing.md has every run) ----

// Resident memory of a server over its tables' own account (EmbeddingTable::bytes): slab and
// allocator slack, request and reply buffers. `ember bench --vocabulary 2000000 --optimizer O
// --dim D`, its "memory" line: bytes/row of resident memory over bytes/row by the servers'
// account; median over sgd, adagrad, adam and ftrl at dim 64 and adagrad at dims 32 and 128
// (runs 1.03 to 1.09).
inline constexpr double kResidentOverTable = 1.04;
// RocksDB's bytes on disk over the rows' keys (12 bytes) and values: its internal key trailer,
// block index and filter, and versions not yet compacted away. `ember bench-tier --rows 2000000
// --dim 64 --seconds 3`, "bytes on disk per row" after its recovery run over the 512-byte rows'
// 524 bytes (590.2 / 524; an earlier run of 20M rows of dim 16 gave 150 / 140 = 1.07).
inline constexpr double kDiskOverKeyAndValue = 1.13;
// Server CPU (all of a server's threads) per key, from memory, as a part per key and a part per
// byte the request touches: a pull copies the row's dim values out, a push reads and writes the
// row and its optimizer state. Least-squares fit to `ember bench --server-threads 1 --vocabulary
// 2000000 --requests 150 --rounds 3 --optimizer O --dim D`, the "srv CPU s/Mkey" column, median
// of 3 or 4 runs each: adagrad at dims 32, 64 and 128, adam at dim 64 (docs/sizing.md).
inline constexpr double kPullCpuNanosPerKey = 79;
inline constexpr double kPullCpuNanosPerRowByte = 0.73;
inline constexpr double kPushCpuNanosPerKey = 133;
inline constexpr double kPushCpuNanosPerStateByte = 0.52;
// A tiered table's keys/s against the same table in memory, budget a quarter of the rows, Zipf
// 1.05: pulls at its hit rate (0.877), pushes logging every row before the ack (durability
// ack). `ember bench-tier --rows 2000000 --dim 64 --seconds 3`: 4.71M / 0.61M keys/s pulled and
// 3.52M / 0.124M pushed (an earlier dim-16 run: 1.9 and 13; both vary 2x between runs).
inline constexpr double kTierPullSlowdown = 7.7;
inline constexpr double kTierPushSlowdown = 28.0;
// Partition moves to a joining server, unpaced: a rate for the payload (8-byte key and the
// row's values per row) and a cost per partition (a target runs 4 moves at a time, each paced
// by its 200 ms heartbeats). Fitted to two runs of `ember server --join` into a one-server
// cluster holding 2M dim-64 Adagrad rows (scheduler log: joined to "every planned move is
// done"): 512 of 1024 partitions moved in 30.26 s, 32 of 64 in 3.82 s, 520 MB each time.
inline constexpr double kMoveBytesPerSecond = 250e6;
inline constexpr double kMoveSecondsPerPartition = 0.055;
// Reopening a data directory after SIGKILL: a fixed part (open RocksDB, replay its log) and a
// scan of its rows. `ember bench-tier --rows 2000000 --dim 64`, its recovery line: 1.13 s, then
// 2.35 s for 1.18 GB (500 MB/s); an earlier run of 20M rows of dim 16 scanned 400 MB/s, used here.
inline constexpr double kReopenFixedSeconds = 1.1;
inline constexpr double kReopenScanBytesPerSecond = 400e6;

// ---- Planning margins (choices, not measurements) ----

// Share of a server's memory given to rows: the rest is the process, ZeroMQ's buffers, the
// RocksDB block cache and the page cache. A plan fills servers to this share at most.
inline constexpr double kUsableMemoryShare = 0.8;
// Share of a server's cores a plan keeps busy, so bursts and moves have room.
inline constexpr double kTargetCpuShare = 0.7;
// Share of a server's network a plan fills with pulls and pushes, leaving room for moves.
inline constexpr double kTargetNetworkShare = 0.7;

struct PlanInputs {
  uint64_t rows = 0;  // rows of the table
  uint32_t dim = 0;   // float values per row
  OptimizerKind optimizer = OptimizerKind::kAdagrad;
  RowFormat wire_format = RowFormat::kF32;  // how rows and gradients travel
  // Keys pulled per second over the whole cluster, each also pushed once (a training step
  // pulls its unique keys and pushes their gradients). 0: no throughput target.
  double keys_per_second = 0;
  uint64_t server_memory_bytes = uint64_t{256} << 30;  // RAM of one server
  uint32_t server_cores = 16;                          // cores of one server
  double server_network_bytes_per_second = 25e9 / 8;   // one server's network (25 Gbit/s)
  // Share of rows kept in memory: 1 keeps all; less puts the rest in each server's RocksDB
  // tier (`ember server --memory-budget`).
  double hot_fraction = 1.0;
  uint32_t partitions = 1024;  // cluster.partitions
};

struct Plan {
  PlanInputs inputs;
  // Per row.
  uint32_t row_floats = 0;          // dim + optimizer state
  double row_bytes = 0;             // row_floats * 4: the values alone
  double index_bytes_per_row = 0;   // the hash index at this table's rows per partition
  double chunk_bytes_per_row = 0;   // row storage, with its chunks' unused tails
  double table_bytes_per_row = 0;   // index + chunks: what EmbeddingTable::bytes() counts
  double memory_bytes_per_row = 0;  // table_bytes_per_row * kResidentOverTable
  double disk_bytes_per_row = 0;    // in the RocksDB tier
  double checkpoint_bytes_per_row = 0;
  double wire_bytes_per_key = 0;  // one pull and one push
  // Totals over the cluster.
  double memory_bytes = 0;      // resident, rows in memory
  double disk_bytes = 0;        // RocksDB tier and the cold row files (0 without a tier)
  double cold_file_bytes = 0;   // of disk_bytes: the cold row files, reserved at start
  double checkpoint_bytes = 0;  // one checkpoint
  double network_bytes_per_second = 0;
  double server_cpu_seconds_per_key = 0;  // one pull and one push
  double keys_per_second_per_core = 0;    // pulled and pushed
  // Servers.
  uint32_t servers_for_memory = 0;
  uint32_t servers_for_throughput = 0;  // by CPU
  uint32_t servers_for_network = 0;
  uint32_t servers = 0;  // the largest of the three, at least 1
  double memory_bytes_per_server = 0;
  double disk_bytes_per_server = 0;
  double network_bytes_per_second_per_server = 0;
  // Times for one server's share of the rows.
  double move_seconds = 0;    // moving its partitions to a new server
  double reopen_seconds = 0;  // a restart over its data directory
};

// Index bytes and row-chunk bytes of one partition holding `rows` rows of `floats_per_row`
// floats, as RowStore grows them.
double PartitionIndexBytes(uint64_t rows);
double PartitionChunkBytes(uint64_t rows, uint32_t floats_per_row);

// The plan for `inputs`; InvalidArgument naming the input when one is out of range (no rows or
// more than 10^15, dim 0 or above the table limit, hot_fraction outside (0, 1], no memory,
// cores, network or partitions, a negative or non-finite keys/s), or when the plan needs more
// servers than there are partitions.
Result<Plan> PlanCluster(const PlanInputs& inputs);

// The plan as one JSON object: the inputs and every figure above, under their field names.
std::string PlanJson(const Plan& plan);
// The plan as readable text: the inputs, each figure with the arithmetic that gives it.
std::string PlanText(const Plan& plan);

}  // namespace ember::local
