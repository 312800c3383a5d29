// Live shard scaling: servers join and are drained while clients push, and no update is lost or
// applied twice (rows start at zero and every push adds exactly 1 to each of its keys: SGD,
// learning rate 1, gradient -1, so a row counts the pushes applied to it); a bsp trainer whose
// cluster gains a server and loses another ends with exactly the rows and dense weights of a
// run without scaling; a partition of more than 1 GiB moves (in chunks) with every row intact.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>

#include "common/hash.h"
#include "common/rpc_channel.h"
#include "common/transport.h"
#include "local/local_cluster.h"
#include "tests/integration/small_two_tower.h"
#include "trainer/cpu_backend.h"
#include "trainer/dense_table.h"
#include "trainer/synthetic_source.h"
#include "trainer/tower_batch.h"
#include "trainer/trainer.h"

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

Result<wire::ClusterStatus> ClusterStatusOf(const local::LocalCluster& cluster) {
  Context context;
  RpcChannel scheduler(context, cluster.scheduler_endpoint());
  const uint64_t id = scheduler.NextRequestId();
  ASSIGN_OR_RETURN(auto reply,
                   scheduler.Call(id, wire::EncodeClusterStatusRequest({id, 0}), Millis(5000)));
  if (!reply.status.ok()) return reply.status;
  return std::get<wire::ClusterStatus>(reply.body);
}

Status Drain(const local::LocalCluster& cluster, uint32_t server) {
  Context context;
  RpcChannel scheduler(context, cluster.scheduler_endpoint());
  const uint64_t id = scheduler.NextRequestId();
  ASSIGN_OR_RETURN(auto reply,
                   scheduler.Call(id, wire::EncodeDrain({id, 0}, server), Millis(5000)));
  return reply.status;
}

// Waits (bounded: `polls` times 50 ms) until no move is planned or in flight; returns the last
// status seen.
wire::ClusterStatus WaitForMoves(const local::LocalCluster& cluster, int polls = 600) {
  wire::ClusterStatus last;
  for (int i = 0; i < polls; ++i) {
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
  local::LocalCluster cluster(CountingTable(), {.num_servers = 2, .num_partitions = 32});
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

trainer::ModelConfig SmallModel() { return testing::SmallTwoTowerModel(); }
trainer::SyntheticOptions SmallData() { return testing::SmallSyntheticData(3000, 7); }

// One bsp trainer (dense weights on the servers) for `steps` steps; `scale` runs on the trainer's
// thread after each step. Returns the rows of every key the data uses, then the dense rows.
std::vector<float> TrainBsp(uint32_t steps,
                            const std::function<void(local::LocalCluster&, uint64_t)>& scale) {
  std::vector<TableSpec> tables;
  for (const char* name : {"user", "item"}) {
    TableSpec spec;
    spec.name = name;
    spec.dim = 8;
    spec.seed = HashName(name);
    spec.optimizer.kind = OptimizerKind::kSgd;
    spec.optimizer.learning_rate = 0.5f;
    spec.initializer.stddev = 0.1f;
    tables.push_back(spec);
  }
  tables.push_back(trainer::DenseTableSpec(SmallModel()));
  local::LocalClusterOptions options{.num_servers = 2, .num_partitions = 32};
  options.sync.mode = SyncMode::kBsp;
  local::LocalCluster cluster(tables, options);
  EXPECT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  ps::ClientOptions client_options;
  client_options.heartbeat_interval = Millis(500);
  auto client = cluster.Connect(client_options);
  EXPECT_TRUE(client.ok());
  auto backend = trainer::MakeCpuBackend(SmallModel(), trainer::InitDenseWeights(SmallModel()));
  trainer::SyntheticSource data(SmallData());
  trainer::TrainOptions train;
  train.batch_size = 64;
  train.log_every = 0;
  train.user_tables = {"user"};
  train.item_tables = {"item"};
  train.sync = options.sync;
  train.dense = "servers";
  auto loop = trainer::Trainer::Create(client->get(), backend.get(), &data, SmallModel(), train);
  EXPECT_TRUE(loop.ok()) << loop.status().ToString();
  (*loop)->set_clock_observer({[&](uint64_t clock) { scale(cluster, clock); }, {}});
  auto summary = (*loop)->Run(steps);
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  WaitForMoves(cluster);

  std::vector<float> out;
  for (const char* table : {"user", "item"}) {
    trainer::SyntheticSource draw(SmallData());
    trainer::Batch batch;
    std::set<uint64_t> used;
    for (uint32_t step = 0; step < steps; ++step) {
      EXPECT_TRUE(draw.Next(64, &batch).ok());
      const auto& slot = std::string(table) == "user" ? batch.user_keys[0] : batch.item_keys[0];
      used.insert(slot.begin(), slot.end());
    }
    std::vector<uint64_t> used_keys(used.begin(), used.end());
    std::vector<float> rows(used_keys.size() * 8);
    EXPECT_TRUE((*client)->Pull(table, used_keys, rows).Wait().ok());
    out.insert(out.end(), rows.begin(), rows.end());
  }
  trainer::DenseTable dense(SmallModel());
  std::vector<float> dense_rows(dense.buffer_floats());
  std::vector<ps::Ticket> pulls;
  dense.StartPull(**client, dense_rows, &pulls);
  EXPECT_TRUE(trainer::WaitAll(pulls).ok());
  out.insert(out.end(), dense_rows.begin(), dense_rows.end());
  return out;
}

TEST(ShardScalingTest, BspTrainingWithAJoinAndADrainEqualsTrainingWithout) {
  const std::vector<float> plain = TrainBsp(30, [](local::LocalCluster&, uint64_t) {});
  const std::vector<float> scaled = TrainBsp(30, [](local::LocalCluster& cluster, uint64_t clock) {
    std::this_thread::sleep_for(milliseconds(20));  // so the moves happen while it trains
    if (clock == 5) {
      auto joined = cluster.AddServer();
      EXPECT_TRUE(joined.ok()) << joined.status().ToString();
    }
    if (clock == 15) {
      EXPECT_TRUE(Drain(cluster, 0).ok());
    }
  });
  ASSERT_EQ(plain.size(), scaled.size());
  size_t differ = 0;
  for (size_t i = 0; i < plain.size(); ++i) differ += plain[i] != scaled[i];
  EXPECT_EQ(differ, 0u) << "of " << plain.size() << " values";
}

// A partition of more than 1 GiB (twice what one message can carry) moves to a joining server,
// chunk by chunk, and every row arrives bit for bit.
TEST(ShardScalingTest, APartitionOfMoreThanOneGibMovesWithEveryRow) {
  TableSpec spec;
  spec.name = "wide";
  spec.dim = 1024;
  spec.seed = HashName("wide");
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.optimizer.learning_rate = 0.05f;
  // A row is its key, 1024 weights and 1024 Adagrad accumulators: 8200 bytes.
  constexpr uint64_t kRowBytes = 8 + 2 * 1024 * 4;
  constexpr uint64_t kRowsPerPartition = (uint64_t{1} << 30) / kRowBytes + 100;
  local::LocalCluster cluster({spec}, {.num_servers = 1, .num_partitions = 2});
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  // Both partitions hold more than 1 GiB: whichever moves is that large.
  std::vector<uint64_t> keys;
  uint64_t in_partition[2] = {0, 0};
  for (uint64_t key = 0; in_partition[0] < kRowsPerPartition || in_partition[1] < kRowsPerPartition;
       ++key) {
    const uint32_t p = PartitionOf(HashName(spec.name), key, 2);
    if (in_partition[p] < kRowsPerPartition) {
      ++in_partition[p];
      keys.push_back(key);
    }
  }
  auto client = cluster.Connect("filler");
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  // Pushes make every row and its optimizer state differ from a fresh one; then a digest of the
  // rows of each batch of keys.
  constexpr size_t kBatch = 16384;
  std::vector<float> values(kBatch * spec.dim);
  auto digests = [&]() {
    std::vector<size_t> out;
    for (size_t first = 0; first < keys.size(); first += kBatch) {
      const std::span<const uint64_t> batch(keys.data() + first,
                                            std::min(kBatch, keys.size() - first));
      const std::span<float> rows(values.data(), batch.size() * spec.dim);
      EXPECT_TRUE((*client)->Pull("wide", batch, rows).Wait().ok());
      out.push_back(std::hash<std::string_view>()(std::string_view(
          reinterpret_cast<const char*>(rows.data()), rows.size_bytes())));
    }
    return out;
  };
  for (size_t first = 0; first < keys.size(); first += kBatch) {
    const std::span<const uint64_t> batch(keys.data() + first,
                                          std::min(kBatch, keys.size() - first));
    for (size_t i = 0; i < batch.size() * spec.dim; ++i) {
      values[i] = static_cast<float>((batch[i / spec.dim] + i) % 97) / 97.0f - 0.5f;
    }
    ASSERT_TRUE(
        (*client)->Push("wide", batch, std::span<const float>(values.data(), batch.size() * spec.dim))
            .Wait()
            .ok());
  }
  const std::vector<size_t> before = digests();

  auto joined = cluster.AddServer();
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  const wire::ClusterStatus after = WaitForMoves(cluster, /*polls=*/6000);
  ASSERT_EQ(after.moves_in_flight + after.moves_planned, 0u);
  EXPECT_EQ(after.moves_done, 1u);
  EXPECT_EQ(after.servers.at(1).partitions, 1u);
  EXPECT_EQ(digests(), before);
}

// A pull of several tables from a client whose routing goes stale as partitions move: every
// sub-request a server refuses is sent again to the new owner with its rows still landing at
// their places in each table's output. Rows are made distinct first (row = key, or 2 * key).
TEST(ShardScalingTest, PullOfSeveralTablesFindsEveryRowWhilePartitionsMove) {
  std::vector<TableSpec> tables = CountingTable();
  TableSpec wide = tables[0];
  wide.name = "wide";
  wide.dim = 2 * kDim;
  wide.seed = HashName("wide");
  tables.push_back(wide);
  local::LocalCluster cluster(tables, {.num_servers = 2, .num_partitions = 32});
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  auto client = cluster.Connect("trainer");
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::vector<uint64_t> keys(kKeys);
  for (uint32_t k = 0; k < kKeys; ++k) keys[k] = k;
  const std::vector<uint64_t> backwards(keys.rbegin(), keys.rend());
  std::vector<float> narrow_grads(kKeys * kDim), wide_grads(kKeys * 2 * kDim);
  for (uint32_t k = 0; k < kKeys; ++k) {
    std::fill_n(narrow_grads.begin() + k * kDim, kDim, -float(k));
    std::fill_n(wide_grads.begin() + k * 2 * kDim, 2 * kDim, -2.0f * float(k));
  }
  ASSERT_TRUE((*client)->Push("count", keys, narrow_grads).Wait().ok());
  ASSERT_TRUE((*client)->Push("wide", keys, wide_grads).Wait().ok());

  std::vector<float> narrow(kKeys * kDim), wide_rows(kKeys * 2 * kDim);
  const ps::TablePull pulls[] = {{"count", keys, narrow}, {"wide", backwards, wide_rows}};
  const auto pull_and_check = [&]() -> Status {
    RETURN_IF_ERROR((*client)->Pull(pulls).Wait());
    for (uint32_t i = 0; i < kKeys; ++i) {
      if (narrow[i * kDim] != float(keys[i]) || wide_rows[i * 2 * kDim] != 2.0f * backwards[i]) {
        return DataLoss("position " + std::to_string(i) + ": " +
                        std::to_string(narrow[i * kDim]) + " and " +
                        std::to_string(wide_rows[i * 2 * kDim]));
      }
    }
    return Status::Ok();
  };
  ASSERT_TRUE(pull_and_check().ok());
  ASSERT_TRUE(cluster.AddServer().ok());
  for (int poll = 0; poll < 600; ++poll) {  // while the moves go on (bounded)
    Status pulled = pull_and_check();
    ASSERT_TRUE(pulled.ok()) << pulled.ToString();
    auto status = ClusterStatusOf(cluster);
    if (status.ok() && status->moves_in_flight == 0 && status->moves_planned == 0 &&
        status->servers.at(2).partitions > 0) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(20));
  }
  Status after = pull_and_check();
  EXPECT_TRUE(after.ok()) << after.ToString();
  EXPECT_GT(WaitForMoves(cluster).servers.at(2).partitions, 0u);
}

}  // namespace
}  // namespace ember
