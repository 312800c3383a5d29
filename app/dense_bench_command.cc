// `ember bench-dense`: the dense-step benchmark (bench/dense_bench.h), one line per batch size.
#include <cstdio>
#include <vector>

#include "app/commands.h"
#include "bench/dense_bench.h"

namespace ember::app {
namespace {

constexpr CommandText kBenchDenseCommand = {
    .name = "bench-dense",
    .summary = "time the dense two-tower step alone on the configured backend",
    .usage = "ember bench-dense [--batches 4096,16384] [--backend cuda|cpu]",
    .description =
        "Times training steps of the default two-tower model on random pre-gathered embedding "
        "rows (no servers) and prints steps/s, samples/s and ms/step per batch size.",
};

void AddDenseBenchFlags(CLI::App* command, DenseBenchFlags* flags) {
  AddValue(command, "--batches", &flags->batches, "LIST",
           "comma-separated batch sizes (default: 4096,16384)")
      ->delimiter(',')
      ->check(CLI::Range(1u, 1u << 20))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  AddValue(command, "--backend", &flags->options.backend, "KIND", "cuda or cpu (default: cuda)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  AddValue(command, "--windows", &flags->options.windows, "N",
           "timed windows per batch size; the median is reported (default: 7)")
      ->check(CLI::Range(1, 1'000'000));
  AddValue(command, "--steps", &flags->options.steps, "N",
           "training steps per window (default: 50)")
      ->check(CLI::Range(1, 1'000'000));
  command->add_flag("--tf32", flags->tf32, "TF32 tensor-core matrix products (model.tf32)");
  command->add_flag("--no-graphs", flags->no_graphs,
                    "launch every kernel instead of replaying CUDA graphs");
}

}  // namespace

Command MakeDenseBenchCommand(CLI::App& ember) {
  return MakeCommand(ember, kBenchDenseCommand, AddDenseBenchFlags, RunDenseBench);
}

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
