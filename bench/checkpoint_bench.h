// The checkpoint benchmark behind `ember bench-checkpoint`: a local cluster of servers holding one
// table of `rows` rows (in memory, or tiered over RocksDB with a memory budget) cuts checkpoints
// the way a training run does, full and incremental side by side. For each share of rows changed
// since the previous cut it measures, per round, the bytes and the time (the pause training would
// see) of an incremental cut after a base and of a full cut of the same state; then it builds a
// chain of a base and `chain - 1` increments, and times restoring its tip against restoring a full
// checkpoint of the same rows, and folding the chain into a new base. Blocks until done.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ember::bench {

struct CheckpointBenchOptions {
  uint64_t rows = 2'000'000;
  uint32_t dim = 16;
  std::string optimizer = "adagrad";
  uint32_t servers = 2;
  uint32_t partitions = 256;
  std::vector<double> changed_percent = {1, 10, 50};  // of the rows, between two cuts
  uint32_t rounds = 3;          // per share changed; medians are reported
  uint32_t chain = 10;          // checkpoints of the restored chain, its base included
  double chain_changed_percent = 10;
  std::string dir;              // new or empty: checkpoints and (tiered) the servers' data
  bool tiered = false;          // rows over RocksDB under dir/data, a quarter in memory
  double budget_fraction = 0.25;
};

// Bytes and seconds of one cut.
struct CutFigures {
  uint64_t bytes = 0;
  double seconds = 0;
};

struct CheckpointBenchReport {
  double populate_seconds = 0;
  struct Share {
    double changed_percent = 0;
    CutFigures full, incremental;  // medians over the rounds
    double bytes_ratio = 0;        // incremental / full, median of the rounds' ratios
    double seconds_ratio = 0;
  };
  std::vector<Share> shares;
  CutFigures chain_base;                // the chain's base
  CutFigures chain_increment;           // median of its increments
  double restore_chain_seconds = 0;     // restoring the chain's tip (every link read)
  double restore_full_seconds = 0;      // restoring a full checkpoint of the same rows
  double compact_seconds = 0;           // folding the chain into a new base
  uint64_t compacted_bytes = 0;
};

// InvalidArgument naming the first option out of its range.
Status CheckCheckpointBenchOptions(const CheckpointBenchOptions& options);

// Runs the benchmark; each line of the human-readable account goes to `progress` as soon as its
// figures are in.
Result<CheckpointBenchReport> RunCheckpointBench(
    const CheckpointBenchOptions& options,
    const std::function<void(const std::string&)>& progress);

}  // namespace ember::bench
