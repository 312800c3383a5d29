// SchedulerMetrics: the scheduler's Prometheus collector (served by common/metrics_endpoint.h
// when the scheduler runs with --metrics-bind).
//
// The scheduler's state belongs to its one thread, so a scrape never reads it: after every turn
// of its loop (a handled message, or a poll that timed out) the scheduler publishes a small
// SchedulerSnapshot here under a mutex, and Collect() turns the latest one into metric families.
// A scrape sees the state as of the last turn (at most the loop's 100 ms poll old).
//
// Thread-safety: Publish() from the scheduler's thread, Collect() from the endpoint's HTTP
// threads, at once.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/limits.h"

namespace ember::scheduler {

// What the scheduler's metrics show, copied out of its loop.
struct SchedulerSnapshot {
  uint64_t routing_epoch = 0;                         // 0 until the cluster formed
  std::map<std::string, uint32_t> servers_by_state;   // registered, live, draining, drained, dead
  std::map<std::string, uint32_t> trainers_by_state;  // live, left, dead
  uint64_t moves_planned = 0;                         // waiting for a slot on their target
  uint64_t moves_running = 0;
  uint64_t moves_done = 0;
  uint64_t slowest_clock = 0;   // lowest clock of the live trainers at work (0 with none)
  uint64_t fastest_clock = 0;   // highest clock of the live trainers at work
  uint64_t cuts_completed = 0;  // checkpoint cuts that completed
  uint64_t cuts_failed = 0;
  std::vector<LimitHit> limits_hit;
};

class SchedulerMetrics : public prometheus::Collectable {
 public:
  void Publish(SchedulerSnapshot snapshot);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  mutable std::mutex mu_;
  SchedulerSnapshot snapshot_;  // guarded by mu_
};

}  // namespace ember::scheduler
