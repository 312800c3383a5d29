// Tests for SplitByServer: every key goes to the server owning its partition, once; a push's share
// is in partition order with the keys of one partition (duplicates included) in their given order;
// the other kinds keep their positions ascending.
#include "ps/client/key_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/hash.h"

namespace ember::ps {
namespace {

constexpr uint32_t kPartitions = 16;

RoutingTable ThreeServers() {
  RoutingTable routing;
  routing.epoch = 1;
  routing.num_partitions = kPartitions;
  for (uint32_t id = 0; id < 3; ++id) routing.servers.push_back({id, "tcp://127.0.0.1:1"});
  // Not contiguous, as after partitions moved: owner = partition % 3.
  for (uint32_t p = 0; p < kPartitions; ++p) routing.owners.push_back(p % 3);
  return routing;
}

// 200 keys; every seventh repeats the key three places before it.
std::vector<uint64_t> Keys() {
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 200; ++k) keys.push_back(k % 7 == 3 ? keys[k - 3] : 1000 + k * 37);
  return keys;
}

Operation OneTable(Operation::Kind kind, const TableSpec& spec, std::span<const uint64_t> keys) {
  Operation op;
  op.kind = kind;
  op.parts.push_back({&spec, HashName(spec.name), keys, {}, 0});
  return op;
}

uint32_t PartitionAt(const Operation& op, uint32_t position) {
  const Operation::Part& part = op.PartOf(position);
  return PartitionOf(part.table_id, part.keys[position - part.first], kPartitions);
}

// Every position of `expected` in exactly one share, the share of its partition's owner.
void ExpectEachPositionAtItsOwner(const Operation& op, const RoutingTable& routing,
                                  const std::vector<std::vector<uint32_t>>& shares,
                                  std::vector<uint32_t> expected) {
  ASSERT_EQ(shares.size(), routing.servers.size());
  std::vector<uint32_t> all;
  for (uint32_t server = 0; server < shares.size(); ++server) {
    for (uint32_t position : shares[server]) {
      EXPECT_EQ(routing.owners[PartitionAt(op, position)], server) << "position " << position;
      all.push_back(position);
    }
  }
  std::sort(all.begin(), all.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(all, expected);
}

std::vector<uint32_t> AllPositions(size_t count) {
  std::vector<uint32_t> all(count);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

// An operation of `kind` on Keys() of one table, split over ThreeServers().
struct SplitOfOneTable {
  explicit SplitOfOneTable(Operation::Kind kind)
      : op(OneTable(kind, spec, keys)), shares(SplitByServer(op, routing, {})) {
    ExpectEachPositionAtItsOwner(op, routing, shares, AllPositions(keys.size()));
  }
  TableSpec spec{.name = "items", .dim = 4};
  std::vector<uint64_t> keys = Keys();
  RoutingTable routing = ThreeServers();
  Operation op;
  std::vector<std::vector<uint32_t>> shares;
};

TEST(KeySplitTest, APullKeepsEachServersPositionsAscending) {
  const SplitOfOneTable split(Operation::Kind::kPull);
  for (const auto& share : split.shares) {
    EXPECT_FALSE(share.empty());
    EXPECT_TRUE(std::is_sorted(share.begin(), share.end()));
  }
}

TEST(KeySplitTest, APushOrdersEachShareByPartitionKeepingTheOrderWithinOne) {
  const SplitOfOneTable split(Operation::Kind::kPush);
  const Operation& op = split.op;
  for (const auto& share : split.shares) {
    for (size_t i = 1; i < share.size(); ++i) {
      const uint32_t before = PartitionAt(op, share[i - 1]), now = PartitionAt(op, share[i]);
      EXPECT_LE(before, now) << "at " << i;
      if (before == now) EXPECT_LT(share[i - 1], share[i]) << "at " << i;
    }
  }
  // So a key given twice reaches its server in the order given: its first gradient first.
  const std::vector<uint64_t>& keys = split.keys;
  for (uint32_t repeat = 3; repeat < keys.size(); repeat += 7) {
    const auto& share = split.shares[split.routing.owners[PartitionAt(op, repeat)]];
    const auto first = std::find(share.begin(), share.end(), repeat - 3);
    const auto second = std::find(share.begin(), share.end(), repeat);
    ASSERT_EQ(keys[repeat - 3], keys[repeat]);
    EXPECT_LT(first, second) << "key " << keys[repeat];
  }
}

TEST(KeySplitTest, OnlyTheGivenPositionsAreSplitInTheOrderOfTheirKind) {
  TableSpec spec{.name = "items", .dim = 4};
  const std::vector<uint64_t> keys = Keys();
  const std::vector<uint32_t> some = {5, 9, 17, 40, 41, 42, 100, 150, 199};
  for (auto kind : {Operation::Kind::kPull, Operation::Kind::kPush}) {
    const Operation op = OneTable(kind, spec, keys);
    const RoutingTable routing = ThreeServers();
    const auto shares = SplitByServer(op, routing, some);
    ExpectEachPositionAtItsOwner(op, routing, shares, some);
  }
}

TEST(KeySplitTest, APullOfSeveralTablesFindsEachPositionsTable) {
  TableSpec users{.name = "users", .dim = 4}, items{.name = "items", .dim = 8};
  const std::vector<uint64_t> user_keys = {1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<uint64_t> item_keys = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  Operation op;
  op.kind = Operation::Kind::kPull;
  op.parts.push_back({&users, HashName(users.name), user_keys, {}, 0});
  op.parts.push_back({&items, HashName(items.name), item_keys, {}, 8});
  const RoutingTable routing = ThreeServers();
  const auto shares = SplitByServer(op, routing, {});
  ExpectEachPositionAtItsOwner(op, routing, shares, AllPositions(18));
  // The same key in two tables lands by each table's own hash.
  bool differs = false;
  for (uint32_t k = 0; k < 8; ++k) differs |= PartitionAt(op, k) != PartitionAt(op, 8 + k);
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace ember::ps
