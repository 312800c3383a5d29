// `ember bench-dense`: the dense-step benchmark (bench/dense_bench.h), one line per batch size.
#include <cstdio>
#include <vector>

#include "app/commands.h"
#include "bench/dense_bench.h"

namespace ember::app {

int RunDenseBench(const DenseBenchFlags& flags) {
  bench::DenseBenchOptions options = flags.options;
  options.model.tf32 = flags.tf32;
  options.model.cuda_graphs = !flags.no_graphs;
  const std::string label = "ember-" + options.backend;
  for (uint32_t batch : flags.batches) {
    auto timing = bench::TimeDenseSteps(options, batch);
    if (!timing.ok()) {
      return PrintError("bench-dense", timing.status().WithContext("B=" + std::to_string(batch)));
    }
    const double per_step = timing->seconds_per_step;
    std::printf("dense    B=%6u %-10s %8.1f steps/s %9.0f samples/s %8.3f ms/step  busy %3.0f%%\n",
                batch, label.c_str(), 1.0 / per_step, batch / per_step, 1000.0 * per_step,
                100.0 * timing->busy_share);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace ember::app
