// SchedulerMetrics, and the snapshot the scheduler's loop publishes to it.
#include "scheduler/scheduler_metrics.h"

#include "common/metric_families.h"
#include "scheduler/scheduler.h"

namespace ember::scheduler {

using metrics::AddSample;
using metrics::CounterFamily;
using metrics::GaugeFamily;
using metrics::Single;

void SchedulerMetrics::Publish(SchedulerSnapshot snapshot) {
  std::lock_guard lock(mu_);
  snapshot_ = std::move(snapshot);
}

std::vector<prometheus::MetricFamily> SchedulerMetrics::Collect() const {
  SchedulerSnapshot s;
  {
    std::lock_guard lock(mu_);
    s = snapshot_;
  }
  std::vector<prometheus::MetricFamily> families;
  auto servers =
      GaugeFamily("ember_scheduler_servers", "Servers known to the scheduler, by state.");
  for (const auto& [state, count] : s.servers_by_state)
    AddSample(servers, count, {{"state", state}});
  families.push_back(std::move(servers));
  auto trainers = GaugeFamily("ember_scheduler_trainers",
                              "Trainers (and clients) registered with the scheduler, by state.");
  for (const auto& [state, count] : s.trainers_by_state) {
    AddSample(trainers, count, {{"state", state}});
  }
  families.push_back(std::move(trainers));
  families.push_back(Single(GaugeFamily("ember_scheduler_routing_epoch",
                                        "The routing table's epoch (0 until the cluster forms; "
                                        "each committed partition move bumps it)."),
                            static_cast<double>(s.routing_epoch)));
  auto moves = GaugeFamily("ember_scheduler_moves",
                           "Partition moves planned (waiting for their target) and running.");
  AddSample(moves, static_cast<double>(s.moves_planned), {{"state", "planned"}});
  AddSample(moves, static_cast<double>(s.moves_running), {{"state", "running"}});
  families.push_back(std::move(moves));
  families.push_back(
      Single(CounterFamily("ember_scheduler_moves_done_total", "Partition moves committed."),
             static_cast<double>(s.moves_done)));
  families.push_back(Single(GaugeFamily("ember_scheduler_trainer_clock_spread",
                                        "Steps between the fastest and the slowest live trainer."),
                            static_cast<double>(s.fastest_clock - s.slowest_clock)));
  families.push_back(Single(
      GaugeFamily("ember_scheduler_trainer_clock_max", "Steps the fastest live trainer completed."),
      static_cast<double>(s.fastest_clock)));
  auto cuts = CounterFamily("ember_scheduler_checkpoint_cuts_total",
                            "Checkpoint cuts that ended, by outcome.");
  AddSample(cuts, static_cast<double>(s.cuts_completed), {{"outcome", "completed"}});
  AddSample(cuts, static_cast<double>(s.cuts_failed), {{"outcome", "failed"}});
  families.push_back(std::move(cuts));
  auto refusals = CounterFamily("ember_scheduler_limit_refusals_total",
                                "Requests refused for passing a limit (limits:).");
  for (const LimitHit& hit : s.limits_hit) {
    AddSample(refusals, static_cast<double>(hit.count), {{"limit", hit.limit}});
  }
  families.push_back(std::move(refusals));
  return families;
}

SchedulerSnapshot Scheduler::MetricsSnapshot() const {
  SchedulerSnapshot s;
  s.routing_epoch = routing_.epoch;
  for (const ServerInfo& server : servers_) {
    ++s.servers_by_state[routing_.ready() ? std::string(ServerStateName(moves_.state(server.id)))
                                          : "registered"];
  }
  const TrainerClocks::MemberCounts members = clocks_.CountMembers();
  s.trainers_by_state = {{"live", members.live}, {"left", members.left}, {"dead", members.dead}};
  s.moves_planned = moves_.moves_planned();
  s.moves_running = moves_.moves_in_flight();
  s.moves_done = moves_.moves_done();
  const std::vector<uint32_t> at_work = clocks_.live_trainers();
  for (size_t i = 0; i < at_work.size(); ++i) {
    const uint64_t clock = clocks_.clock_of(at_work[i]);
    s.slowest_clock = i == 0 ? clock : std::min(s.slowest_clock, clock);
    s.fastest_clock = std::max(s.fastest_clock, clock);
  }
  s.cuts_completed = cuts_completed_;
  s.cuts_failed = cuts_failed_;
  s.limits_hit = limits_hit_.Hits();
  return s;
}

}  // namespace ember::scheduler
