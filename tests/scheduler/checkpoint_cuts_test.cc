// CheckpointCuts: announcements one clock ahead, requested cuts past every trainer, coordination
// once everyone arrived, one cut at a time, and the timeout.
#include "scheduler/checkpoint_cuts.h"

#include <gtest/gtest.h>

namespace ember::scheduler {
namespace {

using std::chrono::milliseconds;
using TimePoint = CheckpointCuts::TimePoint;

TEST(CheckpointCutsTest, PeriodicCutsAreAnnouncedOneClockAhead) {
  CheckpointCuts cuts({.every = 5, .dir = "/ckpt", .keep = 2}, milliseconds(1000));
  EXPECT_EQ(cuts.AnnouncedAfter(3).clock, 0u);
  const wire::CutInfo cut = cuts.AnnouncedAfter(4);
  EXPECT_EQ(cut.clock, 5u);
  EXPECT_EQ(cut.dir, "/ckpt/step-000000005");
  EXPECT_EQ(cut.keep, 2u);
  EXPECT_EQ(cuts.AnnouncedAfter(9).dir, "/ckpt/step-000000010");
}

TEST(CheckpointCutsTest, ARequestedCutIsPlacedPastEveryTrainerAndCoordinatedOnce) {
  const TimePoint t0{};
  CheckpointCuts cuts({}, milliseconds(1000));
  EXPECT_EQ(cuts.Request("relative/dir", "", false, 7).status().code(), StatusCode::kInvalidArgument);
  auto clock = cuts.Request("/now", "", false, 7);
  ASSERT_TRUE(clock.ok());
  EXPECT_EQ(*clock, 9u);  // every trainer still reports 8 and hears about 9 then
  EXPECT_EQ(cuts.Request("/again", "", false, 7).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(cuts.AnnouncedAfter(7).clock, 0u);
  EXPECT_EQ(cuts.AnnouncedAfter(8).dir, "/now");

  EXPECT_EQ(cuts.Arrive(0, 8, t0).code(), StatusCode::kInvalidArgument);  // no cut at 8
  ASSERT_TRUE(cuts.Arrive(0, 9, t0).ok());
  EXPECT_FALSE(cuts.ReadyToCoordinate({0, 1}).has_value());
  EXPECT_EQ(cuts.Arrive(1, 10, t0).code(), StatusCode::kFailedPrecondition);  // one at a time
  ASSERT_TRUE(cuts.Arrive(1, 9, t0).ok());
  auto ready = cuts.ReadyToCoordinate({0, 1});
  ASSERT_TRUE(ready.has_value());
  EXPECT_TRUE(ready->coordinate);
  EXPECT_EQ(ready->clock, 9u);
  EXPECT_FALSE(cuts.ReadyToCoordinate({0, 1}).has_value());  // handed out once
  bool requested = false;
  EXPECT_EQ(cuts.Finish(&requested).dir, "/now");
  EXPECT_TRUE(requested);
  EXPECT_FALSE(cuts.active());
  EXPECT_EQ(cuts.AnnouncedAfter(8).clock, 0u);
}

TEST(CheckpointCutsTest, ACutWaitingTooLongTimesOut) {
  const TimePoint t0{};
  CheckpointCuts cuts({.every = 3, .dir = "/p"}, milliseconds(1000));
  ASSERT_TRUE(cuts.Arrive(0, 3, t0).ok());
  EXPECT_TRUE(cuts.CheckProgress(t0 + milliseconds(900)).ok());
  Status late = cuts.CheckProgress(t0 + milliseconds(1100));
  EXPECT_EQ(late.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(late.ToString().find("clock 3"), std::string::npos) << late.ToString();
  bool requested = true;
  EXPECT_EQ(cuts.Finish(&requested).clock, 3u);
  EXPECT_FALSE(requested);
  // The next periodic cut starts afresh.
  ASSERT_TRUE(cuts.Arrive(0, 6, t0).ok());
  EXPECT_TRUE(cuts.ReadyToCoordinate({0}).has_value());
}

}  // namespace
}  // namespace ember::scheduler
