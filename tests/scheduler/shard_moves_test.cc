// ShardMoves: a join plans moves towards the joiner, handed out a few at a time and only once
// their source heard of them; commit and abort decide each move once; drains, dead servers and
// their return.
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

// What the scheduler does at a server's heartbeat: its tasks as a target (which may start moves
// in flight), then the moves out of it, of which it is told.
std::vector<PartitionMove> Heartbeat(ShardMoves& moves, uint32_t server,
                                     const RoutingTable& routing) {
  auto tasks = moves.TasksFor(server, routing);
  (void)moves.MovesOutOf(server);
  return tasks;
}

// The tasks of `target` once every source of a move in flight heard of it.
std::vector<PartitionMove> TasksOnceSourcesKnow(ShardMoves& moves, uint32_t target,
                                                const RoutingTable& routing) {
  (void)moves.TasksFor(target, routing);
  for (uint32_t server = 0; server < moves.server_count(); ++server) {
    (void)moves.MovesOutOf(server);
  }
  return moves.TasksFor(target, routing);
}

TEST(ShardMovesTest, AJoinerGetsItsMovesAFewAtATimeAndEachIsDecidedOnce) {
  const TimePoint t0{};
  RoutingTable routing = Routing(12, 2);
  ShardMoves moves(milliseconds(1000), 2);
  moves.Start(2, t0);
  const uint32_t joiner = moves.Join(routing, t0);
  EXPECT_EQ(joiner, 2u);
  EXPECT_EQ(moves.moves_planned(), 4u);
  EXPECT_TRUE(Heartbeat(moves, 0, routing).empty());  // the target runs its moves
  auto tasks = TasksOnceSourcesKnow(moves, joiner, routing);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(moves.TasksFor(joiner, routing).size(), 2u);  // the same two until decided
  ASSERT_TRUE(moves.Commit(tasks[0]).ok());
  routing.owners[tasks[0].partition] = joiner;
  EXPECT_EQ(moves.Commit(tasks[0]).code(), StatusCode::kFailedPrecondition);  // decided once
  moves.Abort(tasks[1], Aborted("hand-over took too long"));
  EXPECT_EQ(moves.Commit(tasks[1]).code(), StatusCode::kFailedPrecondition);
  // Topped up again, the aborted one included, until every move is done.
  for (int round = 0; round < 10 && routing.PartitionsOwnedBy(joiner) < 4; ++round) {
    for (const PartitionMove& move : TasksOnceSourcesKnow(moves, joiner, routing)) {
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
  for (const PartitionMove& move : TasksOnceSourcesKnow(moves, 0, routing)) {
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
  auto tasks = TasksOnceSourcesKnow(moves, joiner, routing);
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
  EXPECT_FALSE(TasksOnceSourcesKnow(moves, joiner, routing).empty());  // planned again
}

TEST(ShardMovesTest, ATargetGetsAMoveOnlyAfterItsSourceWasToldOfIt) {
  const TimePoint t0{};
  RoutingTable routing = Routing(8, 2);
  ShardMoves moves(milliseconds(1000), 2);
  moves.Start(2, t0);
  ASSERT_TRUE(moves.Drain(1, routing).ok());
  // The target's heartbeat starts two moves, but hands none out: server 1 has not heard of them.
  EXPECT_TRUE(moves.TasksFor(0, routing).empty());
  EXPECT_EQ(moves.moves_in_flight(), 2u);
  EXPECT_TRUE(moves.MovesOutOf(0).in_flight.empty());
  const auto out = moves.MovesOutOf(1);
  ASSERT_EQ(out.in_flight.size(), 2u);
  EXPECT_EQ(out.planned.size(), 2u);  // told ahead of their start
  const auto tasks = moves.TasksFor(0, routing);
  ASSERT_EQ(tasks.size(), 2u);
  for (size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_EQ(tasks[i].partition, out.in_flight[i].partition);
    EXPECT_EQ(tasks[i].from, 1u);
    EXPECT_EQ(tasks[i].to, 0u);
  }
  // Moves the source heard of as planned are handed out as soon as they start.
  for (const PartitionMove& move : tasks) {
    ASSERT_TRUE(moves.Commit(move).ok());
    routing.owners[move.partition] = 0;
  }
  const auto next = moves.TasksFor(0, routing);
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(next[0].partition, out.planned[0].partition);
}

}  // namespace
}  // namespace ember::scheduler
