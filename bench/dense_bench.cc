// The dense-step benchmark: pre-gathered inputs and the timed windows.
#include "bench/dense_bench.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "trainer/backend.h"

namespace ember::bench {
namespace {

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

Result<DenseTiming> TimeSteps(trainer::Backend& backend, const trainer::ModelConfig& model,
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
  DenseTiming timing;
  timing.seconds_per_step = window_seconds[window_seconds.size() / 2];
  timing.busy_share = wall_seconds > 0 ? device_seconds / wall_seconds : 0;
  return timing;
}

}  // namespace

Result<DenseTiming> TimeDenseSteps(const DenseBenchOptions& options, uint32_t batch) {
  if (options.windows == 0 || options.steps == 0 || batch == 0) {
    return InvalidArgument("the dense benchmark needs at least one window, step and sample");
  }
  ASSIGN_OR_RETURN(auto backend, trainer::MakeBackend(options.backend, options.model));
  return TimeSteps(*backend, options.model, batch, options.windows, options.steps);
}

}  // namespace ember::bench
