// MoveProgress: the moves' rate and ETA from snapshots of the scheduler's counts.
#include "local/move_progress.h"

#include <gtest/gtest.h>

namespace ember::local {
namespace {

using std::chrono::seconds;

TEST(MoveProgressTest, RateAndEtaFromSnapshots) {
  MoveProgress progress;
  const auto start = std::chrono::steady_clock::time_point{};
  EXPECT_EQ(progress.EtaSeconds(), std::nullopt);  // nothing seen yet: no count of outstanding
  progress.Add(start, 10, 20);
  EXPECT_EQ(progress.MovesPerSecond(), std::nullopt);
  EXPECT_EQ(progress.EtaSeconds(), std::nullopt);
  progress.Add(start + seconds(2), 10, 20);  // none done yet
  EXPECT_EQ(progress.EtaSeconds(), std::nullopt);
  progress.Add(start + seconds(4), 18, 12);  // 8 moves in 4 s
  EXPECT_DOUBLE_EQ(*progress.MovesPerSecond(), 2.0);
  EXPECT_DOUBLE_EQ(*progress.EtaSeconds(), 6.0);
  progress.Add(start + seconds(10), 30, 0);
  EXPECT_DOUBLE_EQ(*progress.EtaSeconds(), 0.0);
  // A new batch of moves counts from its own start.
  progress.Add(start + seconds(100), 30, 4);
  progress.Add(start + seconds(101), 31, 3);
  EXPECT_DOUBLE_EQ(*progress.MovesPerSecond(), 1.0);
  EXPECT_DOUBLE_EQ(*progress.EtaSeconds(), 3.0);
}

}  // namespace
}  // namespace ember::local
