// SchedulerMetrics: a scrape shows the snapshot the loop published last; TrainerClocks counts its
// members by state.
#include "scheduler/scheduler_metrics.h"

#include <gtest/gtest.h>

#include "scheduler/trainer_clocks.h"
#include "tests/metric_samples.h"

namespace ember::scheduler {
namespace {

using testing::SampleOf;

TEST(SchedulerMetricsTest, AScrapeShowsTheLastPublishedSnapshot) {
  SchedulerMetrics metrics;
  EXPECT_EQ(SampleOf(metrics.Collect(), "ember_scheduler_routing_epoch"), 0);
  SchedulerSnapshot snapshot;
  snapshot.routing_epoch = 3;
  snapshot.servers_by_state = {{"live", 2}, {"draining", 1}};
  snapshot.trainers_by_state = {{"live", 4}, {"left", 1}, {"dead", 0}};
  snapshot.moves_planned = 5;
  snapshot.moves_running = 2;
  snapshot.moves_done = 7;
  snapshot.slowest_clock = 10;
  snapshot.fastest_clock = 13;
  snapshot.cuts_completed = 2;
  snapshot.cuts_failed = 1;
  metrics.Publish(snapshot);
  const auto families = metrics.Collect();
  EXPECT_EQ(SampleOf(families, "ember_scheduler_routing_epoch"), 3);
  EXPECT_EQ(SampleOf(families, "ember_scheduler_servers", {{"state", "draining"}}), 1);
  EXPECT_EQ(SampleOf(families, "ember_scheduler_trainers", {{"state", "live"}}), 4);
  EXPECT_EQ(SampleOf(families, "ember_scheduler_moves", {{"state", "planned"}}), 5);
  EXPECT_EQ(SampleOf(families, "ember_scheduler_moves", {{"state", "running"}}), 2);
  EXPECT_EQ(SampleOf(families, "ember_scheduler_moves_done_total"), 7);
  EXPECT_EQ(SampleOf(families, "ember_scheduler_trainer_clock_spread"), 3);
  EXPECT_EQ(SampleOf(families, "ember_scheduler_checkpoint_cuts_total", {{"outcome", "failed"}}),
            1);
}

TEST(SchedulerMetricsTest, TrainerClocksCountsMembersByState) {
  SyncOptions options;
  options.mode = SyncMode::kBsp;
  options.trainers = 3;
  options.trainer_timeout = std::chrono::milliseconds(1000);
  options.on_trainer_failure = TrainerFailurePolicy::kContinue;
  TrainerClocks clocks(options);
  const TrainerClocks::TimePoint t0{};
  clocks.Join(0, "a", t0);
  clocks.Join(1, "b", t0);
  clocks.Join(2, "c", t0);
  ASSERT_TRUE(clocks.Leave(1, 0, t0).ok());
  (void)clocks.Heartbeat(0, t0 + std::chrono::milliseconds(1500));
  clocks.ExpireSilent(t0 + std::chrono::milliseconds(2000));  // c silent since t0
  const TrainerClocks::MemberCounts counts = clocks.CountMembers();
  EXPECT_EQ(counts.live, 1u);
  EXPECT_EQ(counts.left, 1u);
  EXPECT_EQ(counts.dead, 1u);
}

}  // namespace
}  // namespace ember::scheduler
