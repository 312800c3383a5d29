// `ember bench-checkpoint`: the checkpoint benchmark (bench/checkpoint_bench.h), printing its
// account as it goes.
#include <cstdio>

#include "app/commands.h"
#include "bench/checkpoint_bench.h"

namespace ember::app {

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
