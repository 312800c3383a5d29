// The tier benchmark behind `ember bench-tier`: one server's table over a RocksDB tier with a
// memory budget against the same table all in memory, in one run. Both take the same Zipf pulls
// and then pushes, from several threads, at the storage layer (EmbeddingTable, no network:
// bench/bench.h measures that part). It measures keys/s and request latency for both, the tier's
// hit rate next to that of a memory holding exactly the hottest rows, bytes on disk per row, and
// the time a server needs to reopen its data directory after being killed with SIGKILL while
// pushing. A third phase is shaped like training: each request pulls its keys, then pushes
// gradients for the same keys, tiered once per look-ahead depth, and the tiered/in-memory ratios
// are printed side by side. Blocks until done (minutes for the default 20M rows).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/tier_cold_file.h"
#include "bench/tier_cold_path.h"
#include "bench/tier_file_path.h"
#include "common/status.h"
#include "ps/server/server.h"

namespace ember::bench {

struct TierBenchOptions {
  uint64_t rows = 20'000'000;
  uint32_t dim = 16;
  std::string optimizer = "adagrad";
  double budget_fraction = 0.25;  // of the rows' bytes, kept in memory
  double exponent = 1.05;
  uint32_t keys_per_request = 4096;  // distinct keys per request
  uint32_t threads = 2;              // request threads
  double seconds = 10;               // per measured phase
  std::string data_dir;              // where the tiered table's RocksDB goes; new or empty
  ps::Durability durability = ps::Durability::kAck;  // of the tiered pushes
  // The tiered table's cold row file (embedding/cold_row_file.h), as a percentage of its memory
  // budget; 0: none, every miss reads RocksDB.
  uint32_t cold_file_percent = 400;
  // Look-ahead depths of the tiered pull+push phase, one run each (0: no hints): each request
  // thread hints its next K requests' keys (embedding_table.h, Prefetch), prefetched beside it.
  std::vector<uint32_t> lookaheads = {0};
  // A command that runs PushUntilKilled with these options in another process (the recovery
  // measurement kills it); empty: recovery is not measured.
  std::vector<std::string> pusher_command;
};

// Keys/s and request latency of one phase.
struct TierPhaseFigures {
  double keys_per_second = 0;
  double seconds = 0;  // the phase's wall time
  double p50_ms = 0;
  double p99_ms = 0;
  // Share of requested keys among the hottest rows that fit the budget: the hit rate of a memory
  // that held exactly those rows (a static oracle, for comparison with the eviction policy's).
  double hot_share = 0;
  // In the pull+push phase: keys/s of the pulls and of the pushes alone (keys over the time each
  // thread spent in them); keys_per_second is then the pair's.
  double pull_keys_per_second = 0;
  double push_keys_per_second = 0;
  // CPU of the whole process over the phase (request threads, prefetching threads, the push
  // log's writer and RocksDB's own threads) per key requested, in ns.
  double cpu_ns_per_key = 0;
};

struct TierBenchReport {
  // The table all in memory, created by pulling every row.
  double memory_populate_seconds = 0;
  double memory_bytes = 0;  // the table's own account
  TierPhaseFigures memory_pull, memory_push, memory_pair;

  // Tiered: bulk-loaded to disk, then warmed up with the hot_rows hottest rows (those that fit
  // the budget), as a running server's memory would hold them.
  double bulk_load_seconds = 0;
  uint64_t budget_bytes = 0;
  uint64_t hot_rows = 0;
  double warm_up_seconds = 0;
  TierPhaseFigures tiered_pull, tiered_push;
  // The pull+push phase per look-ahead depth (options.lookaheads), with the tier's hit rate in it
  // and the rows its hints read from disk.
  struct LookaheadRun {
    uint32_t lookahead = 0;
    TierPhaseFigures pair;
    double hit_rate = 0;
    uint64_t prefetched_rows = 0;
    // Rows read from disk (by the requests and by look-ahead) and written back, per key.
    double reads_per_key = 0;
    double writebacks_per_key = 0;
    double cold_file_reads_per_key = 0;  // of reads_per_key, those from the cold row file
    double kept_changed_per_key = 0;     // changed rows evicted into the cold row file, not RocksDB
    // With a push log: bytes it wrote per key, and the rate of its group writes (bytes over the
    // seconds spent writing them, MB/s); 0 without one.
    double log_bytes_per_key = 0;
    double log_mb_per_second = 0;
  };
  std::vector<LookaheadRun> tiered_pairs;
  double hit_rate = 0;  // over the tiered pull and push phases
  uint64_t evictions = 0, writebacks = 0, resident_rows = 0;
  ColdPathFigures cold_path;  // measured on the tiered table's store after its phases
  FilePathFigures file_path;  // a plain file of as many rows, in the same directory
  ColdFileFigures cold_file;  // a cold row file as the tiered table's, in the same directory

  // On disk after the tiered phases, against a row with its optimizer state.
  uint64_t disk_bytes = 0;
  double disk_bytes_per_row = 0;
  uint32_t raw_row_bytes = 0;

  // Reopening after SIGKILL while pushing; unset without a pusher_command.
  std::optional<double> recovery_seconds;
  // RocksDB's open with the replay of its own log and of the push log, part of recovery_seconds.
  double recovery_open_seconds = 0;
  uint64_t recovered_rows = 0;
  // The logged writes that recovery replayed: the pusher's pushes since the log last retired a
  // segment, so recovery's time is compared per write across builds.
  uint64_t recovery_replayed_writes = 0;
};

// InvalidArgument naming the first option out of its range.
Status CheckTierBenchOptions(const TierBenchOptions& options);

// Runs the benchmark (checking `options` first; the data directory must be new or empty). Each
// line of the human-readable account goes to `progress` as soon as its figures are in.
Result<TierBenchReport> RunTierBench(const TierBenchOptions& options,
                                     const std::function<void(const std::string&)>& progress);

// The pushing side of the recovery measurement: pushes to the tiered table under
// options.data_dir, logging as options.durability says, until killed (60 s at most); creates
// data_dir/pushing once it pushes.
Status PushUntilKilled(const TierBenchOptions& options);

}  // namespace ember::bench
