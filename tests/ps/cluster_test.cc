// Client + servers + scheduler over loopback: fan-out, determinism across shard counts, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "common/hash.h"
#include "local/local_cluster.h"

namespace ember {
namespace {

TableSpec MakeTable(const std::string& name, uint32_t dim, OptimizerKind kind) {
  TableSpec spec;
  spec.name = name;
  spec.dim = dim;
  spec.seed = HashName(name);
  spec.optimizer.kind = kind;
  spec.optimizer.learning_rate = 0.1f;
  spec.initializer.kind = InitializerKind::kNormal;
  spec.initializer.stddev = 0.1f;
  return spec;
}

std::vector<TableSpec> TwoTables() {
  return {MakeTable("users", 8, OptimizerKind::kAdagrad),
          MakeTable("items", 4, OptimizerKind::kAdam)};
}

// Runs the same pulls and pushes against a cluster of `servers` shards; returns final rows.
std::vector<float> TrainAndPull(uint32_t servers, const std::vector<uint64_t>& keys) {
  local::LocalCluster cluster(TwoTables(), {.num_servers = servers});
  EXPECT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  auto client = cluster.Connect();
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  if (!client.ok()) return {};
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> rows(keys.size() * 8), grads(keys.size() * 8);
  for (int step = 0; step < 5; ++step) {
    EXPECT_TRUE((*client)->Pull("users", keys, rows).Wait().ok());
    for (float& g : grads) g = normal(rng);
    EXPECT_TRUE((*client)->Push("users", keys, grads, step).Wait().ok());
  }
  EXPECT_TRUE((*client)->Pull("users", keys, rows).Wait().ok());
  return rows;
}

TEST(ClusterTest, RowsDoNotDependOnTheNumberOfServers) {
  std::vector<uint64_t> keys(500);
  std::iota(keys.begin(), keys.end(), 1000);
  keys.push_back(0);
  keys.push_back(~uint64_t{0});
  const std::vector<float> one = TrainAndPull(1, keys);
  const std::vector<float> three = TrainAndPull(3, keys);
  ASSERT_EQ(one.size(), keys.size() * 8);
  ASSERT_EQ(one, three);  // bit-identical: same initialiser, same optimizer steps
}

TEST(ClusterTest, FanOutPlacesEveryRowAtItsPositionAndServersShareTheKeys) {
  local::LocalCluster cluster(TwoTables(), {.num_servers = 3});
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  auto client = cluster.Connect();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::vector<uint64_t> keys(3000);
  std::iota(keys.begin(), keys.end(), 77);
  std::vector<float> batch(keys.size() * 4);
  ASSERT_TRUE((*client)->Pull("items", keys, batch).Wait().ok());
  // Pulling keys one at a time gives the same rows at the same positions.
  for (size_t i = 0; i < keys.size(); i += 397) {
    std::vector<float> single(4);
    ASSERT_TRUE((*client)->Pull("items", std::span(&keys[i], 1), single).Wait().ok());
    for (int d = 0; d < 4; ++d) EXPECT_EQ(single[d], batch[i * 4 + d]) << "key " << keys[i];
  }
  auto stats = (*client)->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_EQ(stats->size(), 3u);
  uint64_t total = 0;
  for (const auto& server : *stats) {
    uint64_t rows = 0;
    for (const auto& t : server.tables) rows += t.rows;
    EXPECT_GT(rows, 500u) << "server " << server.server_id << " got too few of 3000 keys";
    total += rows;
  }
  EXPECT_EQ(total, keys.size());
}

TEST(ClusterTest, ManyConcurrentOperationsFromSeveralThreads) {
  local::LocalCluster cluster(TwoTables(), {.num_servers = 2});
  ASSERT_TRUE(cluster.status().ok());
  auto client = cluster.Connect();
  ASSERT_TRUE(client.ok());
  // SGD-like check with Adagrad would be messy; instead every thread pushes to its own keys and
  // checks that its pulls see only its own pushes.
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<uint64_t> keys(64);
      std::iota(keys.begin(), keys.end(), uint64_t(t) * 100000);
      std::vector<float> before(keys.size() * 8), after(keys.size() * 8);
      std::vector<float> grads(keys.size() * 8, 1.0f);
      for (int round = 0; round < 20; ++round) {
        if (!(*client)->Pull("users", keys, before).Wait().ok()) ++failures;
        if (!(*client)->Push("users", keys, grads).Wait().ok()) ++failures;
        if (!(*client)->Pull("users", keys, after).Wait().ok()) ++failures;
        for (size_t i = 0; i < before.size(); ++i) {
          if (!(after[i] < before[i])) ++failures;  // positive gradient lowers every weight
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// Several clients, each with several threads, push to overlapping keys at once through 2 servers
// with 2 worker threads each; their batches are split into many small messages, so the servers
// apply pieces of different pushes interleaved. With zero rows, gradients of 1 and SGD at rate 0.5
// every sum is exact: each row must end at -0.5 times the number of pushes it received.
TEST(ClusterTest, ConcurrentPushesFromSeveralClientsLoseNoUpdate) {
  TableSpec table = MakeTable("sums", 4, OptimizerKind::kSgd);
  table.optimizer.learning_rate = 0.5f;
  table.initializer.kind = InitializerKind::kZeros;
  local::LocalCluster cluster({table}, {.num_servers = 2, .worker_threads = 2});
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  constexpr int kClients = 3, kThreadsPerClient = 2, kRounds = 30;
  constexpr uint64_t kKeys = 500;
  std::vector<std::unique_ptr<ps::Client>> clients;
  for (int c = 0; c < kClients; ++c) {
    ps::ClientOptions options;
    options.name = "pusher-" + std::to_string(c);
    options.max_keys_per_message = 7;
    auto client = cluster.Connect(std::move(options));
    ASSERT_TRUE(client.ok()) << client.status().ToString();
    clients.push_back(std::move(*client));
  }
  // Thread (c, t) pushes in round r the keys congruent to anything but (c + t + r) mod 3.
  auto keys_of = [](int c, int t, int r) {
    std::vector<uint64_t> keys;
    for (uint64_t k = 0; k < kKeys; ++k) {
      if (static_cast<int>(k % 3) != (c + t + r) % 3) keys.push_back(k);
    }
    return keys;
  };
  std::vector<uint64_t> expected(kKeys, 0);
  for (int c = 0; c < kClients; ++c) {
    for (int t = 0; t < kThreadsPerClient; ++t) {
      for (int r = 0; r < kRounds; ++r) {
        for (uint64_t key : keys_of(c, t, r)) ++expected[key];
      }
    }
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    for (int t = 0; t < kThreadsPerClient; ++t) {
      threads.emplace_back([&, c, t] {
        for (int r = 0; r < kRounds; ++r) {
          const std::vector<uint64_t> keys = keys_of(c, t, r);
          const std::vector<float> grads(keys.size() * table.dim, 1.0f);
          if (!clients[c]->Push("sums", keys, grads).Wait().ok()) ++failures;
        }
      });
    }
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(failures.load(), 0);
  std::vector<uint64_t> all(kKeys);
  std::iota(all.begin(), all.end(), uint64_t{0});
  std::vector<float> rows(kKeys * table.dim);
  ASSERT_TRUE(clients[0]->Pull("sums", all, rows).Wait().ok());
  for (uint64_t key = 0; key < kKeys; ++key) {
    for (uint32_t i = 0; i < table.dim; ++i) {
      ASSERT_EQ(rows[key * table.dim + i], -0.5f * static_cast<float>(expected[key])) << key;
    }
  }
}

TEST(ClusterTest, Fp16WireRowsMatchFp32WithinRounding) {
  local::LocalCluster cluster(TwoTables(), {.num_servers = 2});
  ASSERT_TRUE(cluster.status().ok());
  auto exact = cluster.Connect("fp32");
  ps::ClientOptions options;
  options.scheduler_endpoint = cluster.scheduler_endpoint();
  options.name = "fp16";
  options.row_format = wire::RowFormat::kF16;
  auto narrow = ps::Client::Connect(options);
  ASSERT_TRUE(exact.ok() && narrow.ok());
  std::vector<uint64_t> keys(300);
  std::iota(keys.begin(), keys.end(), 5);
  std::vector<float> rows32(keys.size() * 8), rows16(keys.size() * 8);
  ASSERT_TRUE((*exact)->Pull("users", keys, rows32).Wait().ok());
  ASSERT_TRUE((*narrow)->Pull("users", keys, rows16).Wait().ok());
  for (size_t i = 0; i < rows32.size(); ++i) {
    EXPECT_LE(std::abs(rows16[i] - rows32[i]), std::ldexp(std::abs(rows32[i]), -11) + 1e-7f);
  }
  // An fp16 push is applied: rows move.
  std::vector<float> grads(keys.size() * 8, 0.5f);
  ASSERT_TRUE((*narrow)->Push("users", keys, grads).Wait().ok());
  std::vector<float> after(keys.size() * 8);
  ASSERT_TRUE((*exact)->Pull("users", keys, after).Wait().ok());
  for (size_t i = 0; i < after.size(); ++i) EXPECT_LT(after[i], rows32[i]);
}

TEST(ClusterTest, ClientRejectsBadCallsWithClearErrors) {
  local::LocalCluster cluster(TwoTables(), {.num_servers = 1});
  ASSERT_TRUE(cluster.status().ok());
  auto client = cluster.Connect();
  ASSERT_TRUE(client.ok());
  std::vector<uint64_t> keys = {1, 2};
  std::vector<float> rows(2 * 8);
  Status unknown = (*client)->Pull("nope", keys, rows).Wait();
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.message().find("nope"), std::string::npos);
  std::vector<float> short_rows(3);
  Status size = (*client)->Pull("users", keys, short_rows).Wait();
  EXPECT_EQ(size.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE((*client)->Pull("users", {}, {}).Wait().ok());
}

TEST(ClusterTest, BarrierReleasesWhenEveryoneArrived) {
  local::LocalCluster cluster(TwoTables(), {.num_servers = 1});
  ASSERT_TRUE(cluster.status().ok());
  auto a = cluster.Connect("a");
  auto b = cluster.Connect("b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->trainer_id(), (*b)->trainer_id());
  // Alone, the barrier times out.
  EXPECT_EQ((*a)->scheduler().Barrier("solo", 2, Millis(200)).code(),
            StatusCode::kDeadlineExceeded);
  Status from_b;
  std::thread other([&] { from_b = (*b)->scheduler().Barrier("start", 2, Millis(10'000)); });
  EXPECT_TRUE((*a)->scheduler().Barrier("start", 2, Millis(10'000)).ok());
  other.join();
  EXPECT_TRUE(from_b.ok());
}

TEST(ClusterTest, OperationsFailWithDeadlineWhenServersAreGone) {
  auto cluster = std::make_unique<local::LocalCluster>(
      TwoTables(), local::LocalClusterOptions{.num_servers = 1});
  ASSERT_TRUE(cluster->status().ok());
  ps::ClientOptions options;
  options.scheduler_endpoint = cluster->scheduler_endpoint();
  options.request_timeout = Millis(300);
  auto client = ps::Client::Connect(options);
  ASSERT_TRUE(client.ok());
  cluster.reset();
  std::vector<uint64_t> keys = {5};
  std::vector<float> rows(8);
  EXPECT_EQ((*client)->Pull("users", keys, rows).Wait().code(), StatusCode::kDeadlineExceeded);
}

TEST(ClusterTest, CallToEveryServerNamesTheServerThatRefusedIt) {
  local::LocalCluster cluster(TwoTables(), {.num_servers = 2});
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  auto client = cluster.Connect();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  Status refused = (*client)->Checkpoint("relative/dir", CheckpointAction::kVerify, Millis(10'000));
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.ToString();
  const RoutingTable routing = (*client)->routing();
  const bool names_a_server =
      refused.message().find(routing.servers[0].endpoint) != std::string::npos ||
      refused.message().find(routing.servers[1].endpoint) != std::string::npos;
  EXPECT_TRUE(names_a_server) << refused.ToString();
  // The servers' connections carry on: the next call to all of them succeeds.
  auto stats = (*client)->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->size(), 2u);
}

TEST(ClusterTest, CallsToEveryServerFailAtTheirDeadlineNamingTheSilentServer) {
  std::unique_ptr<ps::Client> client;
  std::string endpoint;
  {
    local::LocalCluster cluster(TwoTables(), {.num_servers = 1});
    ASSERT_TRUE(cluster.status().ok());
    // A short request timeout also bounds the I/O thread's routing refresh once servers are gone.
    auto connected = cluster.Connect({.request_timeout = Millis(300)});
    ASSERT_TRUE(connected.ok());
    client = std::move(*connected);
    endpoint = client->routing().servers[0].endpoint;
  }
  const std::vector<uint32_t> trainers = {0};
  Status apply = client->ApplyClock(1, trainers, Combine::kMean, Millis(300));
  EXPECT_EQ(apply.code(), StatusCode::kDeadlineExceeded) << apply.ToString();
  EXPECT_NE(apply.message().find("applying clock 1"), std::string::npos) << apply.ToString();
  EXPECT_NE(apply.message().find(endpoint), std::string::npos) << apply.ToString();
  EXPECT_EQ(client->Stats(Millis(300)).status().code(), StatusCode::kDeadlineExceeded);
}

}  // namespace
}  // namespace ember
