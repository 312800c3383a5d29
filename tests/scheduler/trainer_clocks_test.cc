// TrainerClocks: grants by staleness, leaving, late joining and dead trainers, with time passed in.
#include "scheduler/trainer_clocks.h"

#include <gtest/gtest.h>

namespace ember::scheduler {
namespace {

using std::chrono::milliseconds;
using TimePoint = TrainerClocks::TimePoint;

SyncOptions Options(SyncMode mode, uint32_t staleness, uint32_t trainers,
                    TrainerFailurePolicy policy = TrainerFailurePolicy::kStop) {
  SyncOptions options;
  options.mode = mode;
  options.staleness = staleness;
  options.trainers = trainers;
  options.on_trainer_failure = policy;
  options.trainer_timeout = milliseconds(1000);
  return options;
}

bool Granted(const TrainerClocks& clocks, uint64_t clock) {
  auto grant = clocks.TryGrant(clock);
  return grant.ok() && grant->has_value();
}

// The trainers whose pushes make up `clock` (empty when not granted).
std::vector<uint32_t> Participants(const TrainerClocks& clocks, uint64_t clock) {
  auto grant = clocks.TryGrant(clock);
  return grant.ok() && grant->has_value() ? (*grant)->trainers : std::vector<uint32_t>{};
}

TEST(TrainerClocksTest, NothingIsGrantedBeforeEveryExpectedTrainerJoined) {
  const TimePoint t0{};
  TrainerClocks clocks(Options(SyncMode::kBsp, 0, 2));
  clocks.Join(0, "a", t0);
  ASSERT_TRUE(clocks.Report(0, 1, t0).ok());
  EXPECT_FALSE(Granted(clocks, 1));
  clocks.Join(1, "b", t0);
  ASSERT_TRUE(clocks.Report(1, 1, t0).ok());
  EXPECT_EQ(Participants(clocks, 1), (std::vector<uint32_t>{0, 1}));
}

TEST(TrainerClocksTest, SspGrantsWhileTheSlowestIsWithinTheStaleness) {
  const TimePoint t0{};
  TrainerClocks clocks(Options(SyncMode::kSsp, 2, 2));
  clocks.Join(0, "fast", t0);
  clocks.Join(1, "slow", t0);
  for (uint64_t c = 1; c <= 2; ++c) {
    ASSERT_TRUE(clocks.Report(0, c, t0).ok());
    EXPECT_TRUE(Granted(clocks, c)) << c;
  }
  ASSERT_TRUE(clocks.Report(0, 3, t0).ok());
  EXPECT_FALSE(Granted(clocks, 3));  // slowest at 0, 3 - 2 > 0
  ASSERT_TRUE(clocks.Report(1, 1, t0).ok());
  EXPECT_TRUE(Granted(clocks, 3));
}

TEST(TrainerClocksTest, ALeaverIsNoLongerAwaitedButItsStepsCount) {
  const TimePoint t0{};
  TrainerClocks clocks(Options(SyncMode::kBsp, 0, 2));
  clocks.Join(0, "a", t0);
  clocks.Join(1, "b", t0);
  ASSERT_TRUE(clocks.Report(0, 4, t0).ok());
  ASSERT_TRUE(clocks.Leave(1, 3, t0).ok());
  EXPECT_EQ(Participants(clocks, 4), (std::vector<uint32_t>{0}));
  EXPECT_EQ(clocks.Report(1, 4, t0).code(), StatusCode::kFailedPrecondition);
}

TEST(TrainerClocksTest, ALateTrainerJoinsAtTheSlowestLiveClock) {
  const TimePoint t0{};
  TrainerClocks clocks(Options(SyncMode::kBsp, 0, 1));
  clocks.Join(0, "a", t0);
  ASSERT_TRUE(clocks.Report(0, 5, t0).ok());
  EXPECT_EQ(clocks.Join(1, "late", t0), 5u);
  ASSERT_TRUE(clocks.Report(0, 6, t0).ok());
  EXPECT_FALSE(Granted(clocks, 6));  // waits for the newcomer's first step
  ASSERT_TRUE(clocks.Report(1, 6, t0).ok());
  EXPECT_EQ(Participants(clocks, 6), (std::vector<uint32_t>{0, 1}));
}

// Two bsp trainers; "a" completes clock 1, "worker-b" falls silent and is expired at 1.5 s.
void SilenceWorkerB(TrainerClocks& clocks) {
  const TimePoint t0{};
  clocks.Join(0, "a", t0);
  clocks.Join(1, "worker-b", t0);
  ASSERT_TRUE(clocks.Report(0, 1, t0 + milliseconds(900)).ok());
  EXPECT_FALSE(Granted(clocks, 1));
  EXPECT_TRUE(clocks.ExpireSilent(t0 + milliseconds(500)).empty());
  EXPECT_EQ(clocks.ExpireSilent(t0 + milliseconds(1500)), (std::vector<uint32_t>{1}));
}

TEST(TrainerClocksTest, ASilentTrainerUnderContinueIsDroppedAndTheOthersGoOn) {
  TrainerClocks clocks(Options(SyncMode::kBsp, 0, 2, TrainerFailurePolicy::kContinue));
  SilenceWorkerB(clocks);
  EXPECT_EQ(Participants(clocks, 1), (std::vector<uint32_t>{0}));  // b never completed clock 1
}

TEST(TrainerClocksTest, ASilentTrainerUnderStopFailsTheRunNamingIt) {
  TrainerClocks clocks(Options(SyncMode::kBsp, 0, 2, TrainerFailurePolicy::kStop));
  SilenceWorkerB(clocks);
  auto grant = clocks.TryGrant(1);
  ASSERT_FALSE(grant.ok());
  EXPECT_EQ(grant.status().code(), StatusCode::kAborted);
  EXPECT_NE(grant.status().message().find("worker-b"), std::string_view::npos)
      << grant.status().ToString();
}

TEST(TrainerClocksTest, UnknownTrainersAndBackwardClocksAreErrors) {
  const TimePoint t0{};
  TrainerClocks clocks(Options(SyncMode::kSsp, 1, 1));
  EXPECT_EQ(clocks.Heartbeat(3, t0).code(), StatusCode::kNotFound);
  clocks.Join(0, "a", t0);
  ASSERT_TRUE(clocks.Report(0, 4, t0).ok());
  EXPECT_EQ(clocks.Report(0, 2, t0).code(), StatusCode::kInvalidArgument);
}

TEST(TrainerClocksTest, AspGrantsAtOnceAndASilentTrainerNeverFailsTheRun) {
  const TimePoint t0{};
  TrainerClocks clocks(Options(SyncMode::kAsp, 0, 2, TrainerFailurePolicy::kStop));
  clocks.Join(0, "fast", t0);
  clocks.Join(1, "tool", t0);  // registers, never reports
  ASSERT_TRUE(clocks.Report(0, 5, t0).ok());
  EXPECT_TRUE(Granted(clocks, 5));  // nobody waits in asp
  EXPECT_EQ(clocks.live_trainers(), std::vector<uint32_t>{0});
  // Only trainers at work can be declared dead, and that never stops an asp run.
  const auto later = t0 + milliseconds(5000);
  EXPECT_EQ(clocks.ExpireSilent(later), std::vector<uint32_t>{0});
  EXPECT_TRUE(clocks.failure().ok());
  EXPECT_TRUE(clocks.live_trainers().empty());
  EXPECT_TRUE(clocks.Heartbeat(1, later).ok());
  // The same trainer started again comes back where it was.
  EXPECT_EQ(clocks.Join(0, "fast", later), 5u);
  EXPECT_TRUE(clocks.Report(0, 6, later).ok());
  EXPECT_EQ(clocks.live_trainers(), std::vector<uint32_t>{0});
}

}  // namespace
}  // namespace ember::scheduler
