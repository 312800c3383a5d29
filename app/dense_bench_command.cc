// `ember bench-dense`: times the dense part of training alone, on pre-gathered embedding rows
// (one unique row per sample per slot, as a dense PyTorch loop sees them), so the backends can be
// compared with a PyTorch reference of the same model without any parameter-server traffic.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "app/command_support.h"
#include "trainer/backend.h"
#include "trainer/model_config.h"

namespace ember::app {
namespace {

int Fail(const Status& status) {
  std::fprintf(stderr, "ember bench-dense: %s\n", status.ToString().c_str());
  return 1;
}

// One tower's pre-gathered inputs: every slot has batch unique rows and inverse[b] = b.
struct DenseTower {
  std::vector<std::vector<float>> rows, grads;
  std::vector<uint32_t> inverse;

  DenseTower(uint32_t slots, uint32_t dim, uint32_t batch, std::mt19937& rng) {
    std::uniform_real_distribution<float> value(-0.1f, 0.1f);
    for (uint32_t s = 0; s < slots; ++s) {
      rows.emplace_back(size_t{batch} * dim);
      for (float& v : rows.back()) v = value(rng);
      grads.emplace_back(size_t{batch} * dim);
    }
    inverse.resize(batch);
    for (uint32_t b = 0; b < batch; ++b) inverse[b] = b;
  }

  trainer::TowerInput Input() {
    trainer::TowerInput input;
    for (size_t s = 0; s < rows.size(); ++s) input.slots.push_back({rows[s], inverse, grads[s]});
    return input;
  }
};

Result<std::vector<uint32_t>> ParseBatches(const std::string& text) {
  std::vector<uint32_t> batches;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    char* end = nullptr;
    const unsigned long value = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value == 0 || value > (1u << 20)) {
      return InvalidArgument("--batches: '" + item + "' is not a batch size in 1..1048576");
    }
    batches.push_back(static_cast<uint32_t>(value));
  }
  if (batches.empty()) return InvalidArgument("--batches: no batch sizes given");
  return batches;
}

struct Timing {
  double seconds_per_step = 0;  // median over the windows
  double busy_share = 0;        // device time / wall time over all windows
};

Result<Timing> TimeBatch(trainer::Backend& backend, const trainer::ModelConfig& model,
                         uint32_t batch, uint32_t windows, uint32_t steps) {
  std::mt19937 rng(batch);
  DenseTower user(model.user_slots, model.embedding_dim, batch, rng);
  DenseTower item(model.item_slots, model.embedding_dim, batch, rng);
  const trainer::TowerInput user_input = user.Input(), item_input = item.Input();
  constexpr int kWarmUpSteps = 10;
  for (int step = 0; step < kWarmUpSteps; ++step) {
    auto stats = backend.TrainStep(batch, user_input, item_input);
    if (!stats.ok()) return stats.status();
  }
  std::vector<double> window_seconds;
  double wall_seconds = 0, device_seconds = 0;
  for (uint32_t w = 0; w < windows; ++w) {
    const auto start = std::chrono::steady_clock::now();
    for (uint32_t step = 0; step < steps; ++step) {
      auto stats = backend.TrainStep(batch, user_input, item_input);
      if (!stats.ok()) return stats.status();
      device_seconds += stats->device_ms / 1000.0;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    wall_seconds += seconds;
    window_seconds.push_back(seconds / steps);
  }
  std::sort(window_seconds.begin(), window_seconds.end());
  Timing timing;
  timing.seconds_per_step = window_seconds[window_seconds.size() / 2];
  timing.busy_share = wall_seconds > 0 ? device_seconds / wall_seconds : 0;
  return timing;
}

}  // namespace

int DenseBenchCommand(int argc, char** argv) {
  const std::vector<FlagSpec> known = {
      {"batches", "LIST", "comma-separated batch sizes (default: 4096,16384)"},
      {"backend", "KIND", "cuda or cpu (default: cuda)"},
      {"windows", "N", "timed windows per batch size; the median is reported (default: 7)"},
      {"steps", "N", "training steps per window (default: 50)"},
      {"tf32", "", "TF32 tensor-core matrix products (model.tf32)"},
      {"no-graphs", "", "launch every kernel instead of replaying CUDA graphs"},
  };
  int exit_code = 0;
  auto flags = ParseCommandFlags(
      argc, argv, "ember bench-dense [--batches 4096,16384] [--backend cuda|cpu]",
      "Times training steps of the default two-tower model on random pre-gathered embedding "
      "rows (no servers) and prints steps/s, samples/s and ms/step per batch size.",
      known, &exit_code);
  if (!flags) return exit_code;
  auto batches = ParseBatches(flags->Get("batches", "4096,16384"));
  if (!batches.ok()) {
    std::fprintf(stderr, "ember bench-dense: %s\n", batches.status().ToString().c_str());
    return 2;
  }
  uint32_t windows = 7, steps = 50;
  for (const char* name : {"windows", "steps"}) {
    auto value = flags->GetUint(name);
    if (!value.ok()) {
      std::fprintf(stderr, "ember bench-dense: %s\n", value.status().ToString().c_str());
      return 2;
    }
    if (!value->has_value()) continue;
    if (**value == 0 || **value > 1000000) {
      std::fprintf(stderr, "ember bench-dense: --%s must be in 1..1000000\n", name);
      return 2;
    }
    (std::string(name) == "windows" ? windows : steps) = static_cast<uint32_t>(**value);
  }
  const std::string kind = flags->Get("backend", "cuda");
  if (kind != "cuda" && kind != "cpu") {
    std::fprintf(stderr, "ember bench-dense: --backend must be cuda or cpu\n");
    return 2;
  }
  trainer::ModelConfig model;  // the tt-bench model: 3+3 slots, dim 64, 256/128/64
  model.tf32 = flags->Has("tf32");
  model.cuda_graphs = !flags->Has("no-graphs");
  const std::string label = "ember-" + kind;
  for (uint32_t batch : *batches) {
    auto backend = trainer::MakeBackend(kind, model);  // fresh weights per batch size
    if (!backend.ok()) return Fail(backend.status());
    auto timing = TimeBatch(**backend, model, batch, windows, steps);
    if (!timing.ok()) return Fail(timing.status().WithContext("B=" + std::to_string(batch)));
    const double per_step = timing->seconds_per_step;
    std::printf("dense    B=%6u %-10s %8.1f steps/s %9.0f samples/s %8.3f ms/step  busy %3.0f%%\n",
                batch, label.c_str(), 1.0 / per_step, batch / per_step, 1000.0 * per_step,
                100.0 * timing->busy_share);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace ember::app
