// `ember bench-checkpoint`: the checkpoint benchmark (bench/checkpoint_bench.h), printing its
// account as it goes.
#include <cstdio>

#include "app/commands.h"
#include "bench/checkpoint_bench.h"

namespace ember::app {
namespace {

constexpr CommandText kBenchCheckpointCommand = {
    .name = "bench-checkpoint",
    .summary = "compare incremental checkpoint cuts with full ones, and time a chain's restore",
    .usage = "ember bench-checkpoint --dir DIR [options]",
    .description =
        "Holds one table in a local cluster (in memory, or --tiered over RocksDB with a memory "
        "budget) and cuts checkpoints as training does: for each share of rows changed since "
        "the cut before, the bytes and time of an incremental cut against a full one of the same "
        "rows; then a chain's restore against a full checkpoint's, and its compaction.",
};

void AddCheckpointBenchFlags(CLI::App* command, CheckpointBenchFlags* flags) {
  bench::CheckpointBenchOptions& o = flags->options;
  AddValue(command, "--dir", &o.dir, "DIR",
           "where the checkpoints (and with --tiered the servers' rows) go (required; new or "
           "empty)")
      ->required();
  AddCount(command, "--rows", &o.rows, "N", "rows in the table (default 2000000)");
  AddCount(command, "--dim", &o.dim, "N", "row width (default 16)");
  AddValue(command, "--optimizer", &o.optimizer, "NAME", "sgd, adagrad (default), adam or ftrl");
  AddCount(command, "--servers", &o.servers, "N", "servers (default 2)");
  AddCount(command, "--partitions", &o.partitions, "N", "partitions (default 256)");
  AddValue(command, "--changed", &o.changed_percent, "P[,P...]",
           "percentages of the rows changed between two cuts (default 1,10,50)")
      ->delimiter(',');
  AddCount(command, "--rounds", &o.rounds, "N", "rounds per measurement; medians (default 3)");
  AddCount(command, "--chain", &o.chain, "N",
           "checkpoints of the restored chain, its base included (default 10)");
  AddValue(command, "--chain-changed", &o.chain_changed_percent, "P",
           "percentage of the rows changed before each increment of the chain (default 10)");
  command->add_flag("--tiered", o.tiered, "rows over RocksDB with a memory budget");
  AddCount(command, "--budget-percent", &flags->budget_percent, "P",
           "--tiered: memory budget as a percentage of the rows (default 25)");
}

}  // namespace

Command MakeCheckpointBenchCommand(CLI::App& ember) {
  return MakeCommand(ember, kBenchCheckpointCommand, AddCheckpointBenchFlags, RunCheckpointBench);
}

int RunCheckpointBench(const CheckpointBenchFlags& flags) {
  bench::CheckpointBenchOptions options = flags.options;
  options.budget_fraction = flags.budget_percent / 100.0;
  if (Status checked = bench::CheckCheckpointBenchOptions(options); !checked.ok()) {
    return PrintError("bench-checkpoint", checked, 2);
  }
  auto report = bench::RunCheckpointBench(options, [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
  if (!report.ok()) {
    return PrintError("bench-checkpoint", report.status(),
                      report.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
  }
  return 0;
}

}  // namespace ember::app
