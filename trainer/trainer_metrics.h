// TrainerMetrics: a trainer's Prometheus collector (served by common/metrics_endpoint.h when
// `ember train` runs with --metrics-bind). It shows the figures of the progress windows the
// trainer already reports (Trainer::Run's on_window; the same figures `--log-jsonl` writes):
// the last window's step, loss and samples/s, and the seconds per step spent waiting for pulls,
// computing, waiting for pushes and waiting for the other trainers, summed over every window.
// A window ends every train.log_every steps, so a scrape is at most that many steps behind.
//
// Thread-safety: Observe() from the training thread, Collect() from the endpoint's HTTP threads.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "trainer/trainer.h"

namespace ember::trainer {

class TrainerMetrics : public prometheus::Collectable {
 public:
  // `batch_size`: samples per step; `rank`: this trainer's rank in the run.
  TrainerMetrics(uint32_t batch_size, uint32_t rank) : batch_size_(batch_size), rank_(rank) {}

  // One more progress window completed.
  void Observe(const WindowStats& window);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  struct Totals {
    WindowStats last;  // the latest window
    uint64_t samples = 0;
    double pull_seconds = 0, compute_seconds = 0, push_seconds = 0, wait_seconds = 0;
  };
  const uint32_t batch_size_;
  const uint32_t rank_;
  mutable std::mutex mu_;
  Totals totals_;  // guarded by mu_
};

}  // namespace ember::trainer
