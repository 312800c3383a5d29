// The dense-step benchmark behind `ember bench-dense`: training steps of the two-tower model alone,
// on random pre-gathered embedding rows (one unique row per sample per slot, as a dense PyTorch
// loop sees them), so the backends can be compared with a PyTorch reference of the same model
// without any parameter-server traffic.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "trainer/model_config.h"

namespace ember::bench {

struct DenseBenchOptions {
  std::string backend = "cuda";  // cuda or cpu
  trainer::ModelConfig model;    // default: the tt-bench model (3+3 slots, dim 64, 256/128/64)
  uint32_t windows = 7;          // timed windows; the median window is reported
  uint32_t steps = 50;           // training steps per window
};

struct DenseTiming {
  double seconds_per_step = 0;  // median over the windows
  double busy_share = 0;        // device time / wall time over all windows
};

// Times training steps of `batch` samples on a fresh backend (fresh weights), after a few
// untimed ones.
Result<DenseTiming> TimeDenseSteps(const DenseBenchOptions& options, uint32_t batch);

}  // namespace ember::bench
