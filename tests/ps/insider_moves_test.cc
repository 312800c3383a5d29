// A valid server key against a live authenticated cluster on loopback: asking a server to copy,
// hand over and release partitions that the scheduler never planned to move changes nothing.
// The server keeps every partition and row, keeps serving, and counts what it refused.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "common/rpc_channel.h"
#include "local/local_cluster.h"

namespace ember::ps {
namespace {

constexpr uint32_t kPartitions = 16;
constexpr uint32_t kDim = 8;

TEST(InsiderMovesTest, AServerKeyCannotEmptyAnotherServer) {
  TableSpec spec;
  spec.name = "item";
  spec.dim = kDim;
  spec.seed = 5;
  local::LocalClusterOptions options;
  options.num_servers = 2;
  options.num_partitions = kPartitions;
  options.authenticate = true;
  local::LocalCluster cluster({spec}, options);
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  auto client = cluster.Connect("trainer");
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::vector<uint64_t> keys(2000);
  std::iota(keys.begin(), keys.end(), 1);
  const std::vector<float> grads(keys.size() * kDim, 0.5f);
  ASSERT_TRUE((*client)->Push("item", keys, grads).Wait().ok());
  std::vector<float> before(keys.size() * kDim);
  ASSERT_TRUE((*client)->Pull("item", keys, before).Wait().ok());

  const ShardService& victim = cluster.server(0).service();
  const uint32_t owned = victim.Stats().partitions_owned;
  ASSERT_GT(owned, 0u);
  Context attacker(1, cluster.server_security());
  // The servers of a LocalCluster share one key pair: the victim's public key is the attacker's.
  RpcChannel channel(attacker, cluster.server(0).endpoint(),
                     cluster.server_security().own.public_key);
  int refused = 0;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    for (auto phase : {wire::TransferPhase::kCopy, wire::TransferPhase::kHandover,
                       wire::TransferPhase::kRelease}) {
      const uint64_t id = channel.NextRequestId();
      auto reply = channel.Call(id, wire::EncodePartitionTransfer({id, 0}, {p, phase}),
                                Millis(10'000));
      ASSERT_TRUE(reply.ok()) << reply.status().ToString();
      refused += !reply->status.ok();
    }
  }
  // Every copy and hand-over, and the release of every partition it owns (releasing one it
  // does not own is a no-op).
  EXPECT_EQ(refused, static_cast<int>(2 * kPartitions + owned));
  // The copies and hand-overs.
  EXPECT_EQ(victim.counters().Get(ShardCount::kTransfersRefused), 2 * kPartitions);
  EXPECT_EQ(victim.Stats().partitions_owned, owned);
  std::vector<float> after(keys.size() * kDim);
  ASSERT_TRUE((*client)->Pull("item", keys, after).Wait().ok());
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace ember::ps
