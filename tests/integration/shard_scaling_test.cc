// Live shard scaling: servers join and are drained while clients push, and no update is lost or
// applied twice; a move whose target dies leaves the source serving.
//
// Rows start at zero and every push adds exactly 1 to each of its keys (SGD, learning rate 1,
// gradient -1), so a row's value counts the pushes applied to it; the test counts the pushes it
// sent per key and compares.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>

#include "app/local_cluster.h"
#include "common/hash.h"
#include "common/transport.h"

namespace ember {
namespace {

using std::chrono::milliseconds;
constexpr uint32_t kDim = 4;
constexpr uint32_t kKeys = 3000;

std::vector<TableSpec> CountingTable() {
  TableSpec spec;
  spec.name = "count";
  spec.dim = kDim;
  spec.seed = HashName("count");
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = 1.0f;
  spec.initializer.kind = InitializerKind::kZeros;
  return {spec};
}

Result<wire::ClusterStatus> ClusterStatusOf(const app::LocalCluster& cluster) {
  zmq::context_t context(1);
  RpcChannel scheduler(context, cluster.scheduler_endpoint());
  const uint64_t id = scheduler.NextRequestId();
  ASSIGN_OR_RETURN(auto reply,
                   scheduler.Call(id, wire::EncodeClusterStatusRequest({id, 0}), Millis(5000)));
  if (!reply.status.ok()) return reply.status;
  return std::get<wire::ClusterStatus>(reply.body);
}

Status Drain(const app::LocalCluster& cluster, uint32_t server) {
  zmq::context_t context(1);
  RpcChannel scheduler(context, cluster.scheduler_endpoint());
  const uint64_t id = scheduler.NextRequestId();
  ASSIGN_OR_RETURN(auto reply,
                   scheduler.Call(id, wire::EncodeDrain({id, 0}, server), Millis(5000)));
  return reply.status;
}

// Waits (bounded) until no move is planned or in flight; returns the last status seen.
wire::ClusterStatus WaitForMoves(const app::LocalCluster& cluster) {
  wire::ClusterStatus last;
  for (int i = 0; i < 600; ++i) {
    auto status = ClusterStatusOf(cluster);
    if (status.ok()) {
      last = *status;
      if (last.moves_in_flight == 0 && last.moves_planned == 0) break;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  return last;
}

TEST(ShardScalingTest, JoinAndDrainWhileClientsPushLoseNoUpdate) {
  app::LocalCluster cluster(CountingTable(), {.num_servers = 2, .num_partitions = 32});
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();

  constexpr int kClients = 3;
  constexpr int kPushesPerClient = 120;
  std::vector<std::vector<uint32_t>> sent(kClients, std::vector<uint32_t>(kKeys, 0));
  std::vector<Status> failures(kClients);
  std::atomic<int> pushes_done{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      auto client = cluster.Connect("pusher-" + std::to_string(c));
      if (!client.ok()) {
        failures[c] = client.status();
        return;
      }
      std::mt19937 rng(c + 1);
      for (int i = 0; i < kPushesPerClient; ++i) {
        std::set<uint64_t> unique;
        while (unique.size() < 400) unique.insert(rng() % kKeys);
        std::vector<uint64_t> keys(unique.begin(), unique.end());
        std::vector<float> grads(keys.size() * kDim, -1.0f);
        Status pushed = (*client)->Push("count", keys, grads).Wait();
        if (!pushed.ok()) {
          failures[c] = pushed;
          return;
        }
        for (uint64_t key : keys) ++sent[c][key];
        ++pushes_done;
        std::this_thread::sleep_for(milliseconds(2));
      }
    });
  }
  // Scale while they push: a server joins, then one of the first two is drained.
  while (pushes_done.load() < kClients * 10) std::this_thread::sleep_for(milliseconds(5));
  auto joined = cluster.AddServer();
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  EXPECT_EQ(*joined, 2u);
  wire::ClusterStatus after_join = WaitForMoves(cluster);
  EXPECT_EQ(after_join.servers.at(2).partitions, 10u);  // 32 / 3, the remainder elsewhere
  ASSERT_TRUE(Drain(cluster, 0).ok());
  for (auto& client : clients) client.join();
  for (const Status& failure : failures) ASSERT_TRUE(failure.ok()) << failure.ToString();
  wire::ClusterStatus after_drain = WaitForMoves(cluster);
  EXPECT_EQ(after_drain.servers.at(0).partitions, 0u);
  EXPECT_EQ(after_drain.servers.at(1).partitions + after_drain.servers.at(2).partitions, 32u);
  EXPECT_GT(after_drain.moves_done, 10u);
  EXPECT_GT(after_drain.routing.epoch, 10u);

  auto reader = cluster.Connect("reader");
  ASSERT_TRUE(reader.ok());
  std::vector<uint64_t> keys(kKeys);
  for (uint32_t k = 0; k < kKeys; ++k) keys[k] = k;
  std::vector<float> rows(kKeys * kDim);
  ASSERT_TRUE((*reader)->Pull("count", keys, rows).Wait().ok());
  int wrong = 0;
  for (uint32_t k = 0; k < kKeys; ++k) {
    uint32_t expected = 0;
    for (int c = 0; c < kClients; ++c) expected += sent[c][k];
    if (rows[k * kDim] != static_cast<float>(expected) && ++wrong <= 5) {
      ADD_FAILURE() << "key " << k << ": " << rows[k * kDim] << " pushes applied, " << expected
                    << " sent";
    }
  }
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace ember
