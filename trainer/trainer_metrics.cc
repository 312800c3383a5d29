// TrainerMetrics: progress windows as Prometheus metric families.
#include "trainer/trainer_metrics.h"

#include <string>

#include "common/metric_families.h"

namespace ember::trainer {

using metrics::AddSample;
using metrics::CounterFamily;
using metrics::GaugeFamily;
using metrics::Single;

void TrainerMetrics::Observe(const WindowStats& window) {
  const double steps =
      window.last_step >= window.first_step ? window.last_step - window.first_step + 1 : 0;
  std::lock_guard lock(mu_);
  totals_.last = window;
  totals_.samples += static_cast<uint64_t>(steps) * batch_size_;
  totals_.pull_seconds += window.pull_ms * steps / 1e3;
  totals_.compute_seconds += window.compute_ms * steps / 1e3;
  totals_.push_seconds += window.push_ms * steps / 1e3;
  totals_.wait_seconds += window.wait_ms * steps / 1e3;
}

std::vector<prometheus::MetricFamily> TrainerMetrics::Collect() const {
  Totals t;
  {
    std::lock_guard lock(mu_);
    t = totals_;
  }
  std::vector<prometheus::MetricFamily> families;
  families.push_back(Single(GaugeFamily("ember_trainer_step",
                                        "Steps completed (pushed and acknowledged), as of the "
                                        "last progress window."),
                            t.last.last_step));
  families.push_back(
      Single(GaugeFamily("ember_trainer_loss", "Mean training loss over the last progress window."),
             t.last.loss));
  families.push_back(Single(GaugeFamily("ember_trainer_samples_per_second",
                                        "Training samples per second over the last progress "
                                        "window."),
                            t.last.samples_per_second));
  families.push_back(Single(
      CounterFamily("ember_trainer_samples_total", "Training samples of the completed windows."),
      static_cast<double>(t.samples)));
  families.push_back(Single(GaugeFamily("ember_trainer_unique_keys_per_step",
                                        "Rows pulled per step (unique keys over all slots), mean "
                                        "of the last progress window."),
                            t.last.unique_keys));
  auto phase_total =
      CounterFamily("ember_trainer_phase_seconds_total",
                    "Seconds spent per phase of the steps: waiting for pulled rows (pull), the "
                    "backend's step (compute), waiting for push acknowledgements (push), waiting "
                    "for the other trainers (wait).");
  auto phase_step = GaugeFamily("ember_trainer_step_phase_seconds",
                                "Seconds per step spent per phase (as "
                                "ember_trainer_phase_seconds_total), mean of the last window.");
  const std::pair<const char*, std::pair<double, double>> phases[] = {
      {"pull", {t.pull_seconds, t.last.pull_ms}},
      {"compute", {t.compute_seconds, t.last.compute_ms}},
      {"push", {t.push_seconds, t.last.push_ms}},
      {"wait", {t.wait_seconds, t.last.wait_ms}}};
  for (const auto& [phase, seconds] : phases) {
    AddSample(phase_total, seconds.first, {{"phase", phase}});
    AddSample(phase_step, seconds.second / 1e3, {{"phase", phase}});
  }
  families.push_back(std::move(phase_total));
  families.push_back(std::move(phase_step));
  families.push_back(
      Single(GaugeFamily("ember_trainer_rank", "This trainer's rank in the run."), rank_));
  return families;
}

}  // namespace ember::trainer
