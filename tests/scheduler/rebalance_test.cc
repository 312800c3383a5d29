// PlanRebalance: fair shares after joins and drains, with the fewest moves.
#include "scheduler/rebalance.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "common/routing_table.h"

namespace ember::scheduler {
namespace {

std::vector<uint32_t> Owners(uint32_t partitions, uint32_t servers) {
  std::vector<ServerInfo> infos;
  for (uint32_t s = 0; s < servers; ++s) infos.push_back({s, "tcp://x:" + std::to_string(s)});
  return MakeBalancedRouting(partitions, infos, 1).owners;
}

// Applies `moves` (checking each moves a partition from its current owner) and returns the counts.
std::map<uint32_t, uint32_t> Apply(std::vector<uint32_t>& owners,
                                   const std::vector<PartitionMove>& moves) {
  std::set<uint32_t> moved;
  for (const PartitionMove& move : moves) {
    EXPECT_EQ(owners[move.partition], move.from) << move.partition;
    EXPECT_TRUE(moved.insert(move.partition).second) << "moved twice: " << move.partition;
    owners[move.partition] = move.to;
  }
  std::map<uint32_t, uint32_t> counts;
  for (uint32_t owner : owners) ++counts[owner];
  return counts;
}

TEST(RebalanceTest, AJoinerTakesAFairShareFromEveryoneAndNothingElseMoves) {
  std::vector<uint32_t> owners = Owners(1024, 2);
  const auto moves = PlanRebalance(owners, {0, 1, 2});
  // 1024 / 3 = 341 rem 1: the joiner gets 341, the two old servers keep 342 and 341.
  EXPECT_EQ(moves.size(), 341u);
  for (const PartitionMove& move : moves) EXPECT_EQ(move.to, 2u);
  auto counts = Apply(owners, moves);
  EXPECT_EQ(counts[2], 341u);
  EXPECT_EQ(counts[0] + counts[1], 683u);
  EXPECT_LE(std::max(counts[0], counts[1]) - std::min(counts[0], counts[1]), 1u);
  EXPECT_TRUE(PlanRebalance(owners, {0, 1, 2}).empty());  // balanced: nothing to do
}

TEST(RebalanceTest, ADrainedServerGivesEverythingAwayEvenly) {
  std::vector<uint32_t> owners = Owners(64, 4);
  const auto moves = PlanRebalance(owners, {0, 2, 3});
  EXPECT_EQ(moves.size(), 16u);  // exactly server 1's partitions
  for (const PartitionMove& move : moves) EXPECT_EQ(move.from, 1u);
  auto counts = Apply(owners, moves);
  EXPECT_EQ(counts.count(1), 0u);
  EXPECT_EQ(counts[0] + counts[2] + counts[3], 64u);
  for (uint32_t s : {0u, 2u, 3u}) EXPECT_GE(counts[s], 21u);
}

TEST(RebalanceTest, JoinThenDrainOfTheJoinerRestoresTheShares) {
  std::vector<uint32_t> owners = Owners(100, 3);
  Apply(owners, PlanRebalance(owners, {0, 1, 2, 3}));
  auto counts = Apply(owners, PlanRebalance(owners, {0, 1, 2}));
  EXPECT_EQ(counts.size(), 3u);
  for (uint32_t s = 0; s < 3; ++s) EXPECT_GE(counts[s], 33u);
  EXPECT_TRUE(PlanRebalance(owners, {0, 1, 2}).empty());
}

}  // namespace
}  // namespace ember::scheduler
