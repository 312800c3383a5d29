// TrainerMetrics: a scrape shows the last progress window and the totals over every window.
#include "trainer/trainer_metrics.h"

#include <gtest/gtest.h>

#include "tests/metric_samples.h"

namespace ember::trainer {
namespace {

using testing::SampleOf;

TEST(TrainerMetricsTest, TheLastWindowAndTotalsOverEveryWindow) {
  TrainerMetrics metrics(/*batch_size=*/100, /*rank=*/2);
  EXPECT_EQ(SampleOf(metrics.Collect(), "ember_trainer_step"), 0);
  metrics.Observe({.first_step = 1,
                   .last_step = 10,
                   .loss = 2.0,
                   .samples_per_second = 500,
                   .pull_ms = 4,
                   .compute_ms = 2,
                   .push_ms = 3,
                   .wait_ms = 1});
  metrics.Observe({.first_step = 11,
                   .last_step = 15,
                   .loss = 1.5,
                   .samples_per_second = 800,
                   .pull_ms = 2,
                   .compute_ms = 2,
                   .push_ms = 1,
                   .wait_ms = 0});
  const auto families = metrics.Collect();
  EXPECT_EQ(SampleOf(families, "ember_trainer_step"), 15);
  EXPECT_EQ(SampleOf(families, "ember_trainer_loss"), 1.5);
  EXPECT_EQ(SampleOf(families, "ember_trainer_samples_per_second"), 800);
  EXPECT_EQ(SampleOf(families, "ember_trainer_samples_total"), 1500);
  EXPECT_NEAR(SampleOf(families, "ember_trainer_phase_seconds_total", {{"phase", "pull"}}), 0.050,
              1e-12);  // 10 steps x 4 ms + 5 x 2 ms
  EXPECT_NEAR(SampleOf(families, "ember_trainer_step_phase_seconds", {{"phase", "push"}}), 0.001,
              1e-12);
  EXPECT_EQ(SampleOf(families, "ember_trainer_rank"), 2);
}

}  // namespace
}  // namespace ember::trainer
