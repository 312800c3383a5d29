// ShardMoves: a join plans moves towards the joiner, handed out a few at a time; commit and
// abort decide each move once; drains, dead servers and their return.
#include "scheduler/shard_moves.h"

#include <gtest/gtest.h>

namespace ember::scheduler {
namespace {

using std::chrono::milliseconds;
using TimePoint = ShardMoves::TimePoint;

RoutingTable Routing(uint32_t partitions, uint32_t servers) {
  std::vector<ServerInfo> infos;
  for (uint32_t s = 0; s < servers; ++s) infos.push_back({s, "tcp://x:" + std::to_string(s)});
  return MakeBalancedRouting(partitions, infos, 1);
}

TEST(ShardMovesTest, AJoinerGetsItsMovesAFewAtATimeAndEachIsDecidedOnce) {
  const TimePoint t0{};
  RoutingTable routing = Routing(12, 2);
  ShardMoves moves(milliseconds(1000), 2);
  moves.Start(2, t0);
  const uint32_t joiner = moves.Join(routing, t0);
  EXPECT_EQ(joiner, 2u);
  EXPECT_EQ(moves.moves_planned(), 4u);
  EXPECT_TRUE(moves.TasksFor(0, routing).empty());  // the target runs its moves
  auto tasks = moves.TasksFor(joiner, routing);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(moves.TasksFor(joiner, routing).size(), 2u);  // the same two until decided
  ASSERT_TRUE(moves.Commit(tasks[0]).ok());
  routing.owners[tasks[0].partition] = joiner;
  EXPECT_EQ(moves.Commit(tasks[0]).code(), StatusCode::kFailedPrecondition);  // decided once
  moves.Abort(tasks[1], Aborted("hand-over took too long"));
  EXPECT_EQ(moves.Commit(tasks[1]).code(), StatusCode::kFailedPrecondition);
  // Topped up again, the aborted one included, until every move is done.
  for (int round = 0; round < 10 && routing.PartitionsOwnedBy(joiner) < 4; ++round) {
    for (const PartitionMove& move : moves.TasksFor(joiner, routing)) {
      ASSERT_TRUE(moves.Commit(move).ok());
      routing.owners[move.partition] = move.to;
    }
  }
  EXPECT_EQ(routing.PartitionsOwnedBy(joiner), 4u);
  EXPECT_EQ(moves.moves_done(), 4u);
  EXPECT_TRUE(moves.TasksFor(joiner, routing).empty());
}

TEST(ShardMovesTest, ADrainMovesEverythingOffAndThenTheServerMayExit) {
  const TimePoint t0{};
  RoutingTable routing = Routing(8, 2);
  ShardMoves moves(milliseconds(1000), 8);
  moves.Start(2, t0);
  EXPECT_EQ(moves.Drain(5, routing).code(), StatusCode::kNotFound);
  ASSERT_TRUE(moves.Drain(1, routing).ok());
  EXPECT_EQ(moves.Drain(0, routing).code(), StatusCode::kFailedPrecondition);  // the last one
  EXPECT_FALSE(moves.DrainedNow(1, routing));
  for (const PartitionMove& move : moves.TasksFor(0, routing)) {
    EXPECT_EQ(move.from, 1u);
    ASSERT_TRUE(moves.Commit(move).ok());
    routing.owners[move.partition] = 0;
  }
  EXPECT_TRUE(moves.DrainedNow(1, routing));
  EXPECT_EQ(moves.state(1), ServerState::kDrained);
}

TEST(ShardMovesTest, ASilentServerIsDeadItsMovesAbortedAndItMayComeBack) {
  const TimePoint t0{};
  RoutingTable routing = Routing(12, 2);
  ShardMoves moves(milliseconds(1000), 4);
  moves.Start(2, t0);
  const uint32_t joiner = moves.Join(routing, t0);
  auto tasks = moves.TasksFor(joiner, routing);
  ASSERT_FALSE(tasks.empty());
  EXPECT_TRUE(moves.ExpireSilent(t0 + milliseconds(5000)).empty());  // none has heartbeated
  ASSERT_TRUE(moves.Heartbeat(joiner, t0).ok());
  ASSERT_TRUE(moves.Heartbeat(0, t0 + milliseconds(900)).ok());
  ASSERT_TRUE(moves.Heartbeat(1, t0 + milliseconds(900)).ok());
  EXPECT_EQ(moves.ExpireSilent(t0 + milliseconds(1500)), std::vector<uint32_t>{joiner});
  EXPECT_EQ(moves.state(joiner), ServerState::kDead);
  EXPECT_EQ(moves.Commit(tasks[0]).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(moves.moves_in_flight(), 0u);
  ASSERT_TRUE(moves.Heartbeat(joiner, t0 + milliseconds(2000)).ok());  // restarted
  EXPECT_EQ(moves.state(joiner), ServerState::kLive);
  EXPECT_FALSE(moves.TasksFor(joiner, routing).empty());  // its share is planned again
}

}  // namespace
}  // namespace ember::scheduler
