// Serving replicas on loopback: a replica of a live cluster serves, to a read-only client, exactly
// the rows the training servers hold once it has followed their changes; a lookup never sees half
// a round; it follows partitions that move to a server that joined, starts a stream again that a
// server forgot, and restarts from its data directory serving at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <thread>
#include <vector>

#include "common/scratch_directory.h"
#include "common/wire.h"
#include "local/local_cluster.h"
#include "ps/replica/replica.h"

namespace ember {
namespace {

using std::chrono::steady_clock;
constexpr uint32_t kDim = 4;

TableSpec Spec(const std::string& name) {
  TableSpec spec;
  spec.name = name;
  spec.dim = kDim;
  spec.seed = 3;
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.optimizer.learning_rate = 0.1f;
  spec.initializer.kind = InitializerKind::kNormal;
  spec.initializer.stddev = 0.1f;
  return spec;
}

std::vector<uint64_t> Keys(uint64_t first, size_t n) {
  std::vector<uint64_t> keys(n);
  std::iota(keys.begin(), keys.end(), first);
  return keys;
}

class ReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    local::LocalClusterOptions options;
    options.num_servers = 2;
    options.num_partitions = 16;
    cluster_ = std::make_unique<local::LocalCluster>(
        std::vector<TableSpec>{Spec("user"), Spec("item")}, options);
    ASSERT_TRUE(cluster_->status().ok()) << cluster_->status().ToString();
    auto trainer = cluster_->Connect("trainer");
    ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
    trainer_ = std::move(*trainer);
  }
  void TearDown() override {
    StopReplica();
    trainer_.reset();
    cluster_.reset();
  }
  void StartReplica(const std::string& data_dir = "") {
    ps::ReplicaOptions options;
    options.scheduler_endpoint = cluster_->scheduler_endpoint();
    options.data_dir = data_dir;
    options.feed.poll_interval = Millis(5);
    options.feed.max_rows = 100;  // several rounds for the first copy
    options.save_interval = Millis(3'600'000);
    replica_ = std::make_unique<ps::Replica>(std::move(options));
    ASSERT_TRUE(replica_->Start().ok());
    serving_ = std::thread([this] { replica_->Run(); });
    ps::ClientOptions client;
    client.scheduler_endpoint = replica_->endpoint();
    client.read_only = true;
    client.request_timeout = Millis(10'000);
    client.register_timeout = Millis(10'000);
    auto reader = ps::Client::Connect(std::move(client));
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    reader_ = std::move(*reader);
  }
  void StopReplica() {
    reader_.reset();
    if (replica_) replica_->RequestStop();
    if (serving_.joinable()) serving_.join();
    replica_.reset();
  }
  void Push(const std::string& table, const std::vector<uint64_t>& keys, float gradient) {
    const std::vector<float> grads(keys.size() * kDim, gradient);
    ASSERT_TRUE(trainer_->Push(table, keys, grads).Wait().ok());
  }
  std::vector<float> Rows(ps::Client& client, const std::string& table,
                          const std::vector<uint64_t>& keys) {
    std::vector<float> rows(keys.size() * kDim);
    Status status = client.Lookup(table, keys, rows).Wait();
    EXPECT_TRUE(status.ok()) << status.ToString();
    return rows;
  }
  // Waits (20 s at most) until the replica answers `keys` of `table` as the cluster does.
  bool ReplicaMatches(const std::string& table, const std::vector<uint64_t>& keys) {
    const std::vector<float> truth = Rows(*trainer_, table, keys);
    const auto deadline = steady_clock::now() + std::chrono::seconds(20);
    while (steady_clock::now() < deadline) {
      std::vector<float> rows(keys.size() * kDim);
      if (reader_->Lookup(table, keys, rows).Wait().ok() && rows == truth) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::unique_ptr<local::LocalCluster> cluster_;
  std::unique_ptr<ps::Client> trainer_;
  std::unique_ptr<ps::Replica> replica_;
  std::unique_ptr<ps::Client> reader_;
  std::thread serving_;
};

TEST_F(ReplicaTest, ServesTheClustersRowsAndFollowsTheirChanges) {
  const std::vector<uint64_t> users = Keys(1, 700), items = Keys(5000, 300);
  Push("user", users, 1.0f);
  Push("item", items, 0.5f);
  StartReplica();
  EXPECT_TRUE(ReplicaMatches("user", users));
  EXPECT_TRUE(ReplicaMatches("item", items));
  EXPECT_TRUE(replica_->ready());
  // Changes after the copy, and new rows.
  Push("user", Keys(100, 50), -2.0f);
  Push("item", Keys(9000, 20), 1.0f);
  EXPECT_TRUE(ReplicaMatches("user", users));
  EXPECT_TRUE(ReplicaMatches("item", Keys(9000, 20)));
  // A key the cluster has no row for: the same initial row, flagged missing.
  const std::vector<uint64_t> absent = {123456789};
  std::vector<float> rows(kDim);
  std::vector<uint8_t> found(1, 1);
  ASSERT_TRUE(reader_->Lookup("user", absent, rows, MissingRows::kInitial, found).Wait().ok());
  EXPECT_EQ(found[0], 0);
  EXPECT_EQ(rows, Rows(*trainer_, "user", absent));
  // The replica answers only what a reader may ask.
  std::vector<float> pulled(kDim);
  EXPECT_EQ(reader_->Pull("user", absent, pulled).Wait().code(), StatusCode::kPermissionDenied);
  const ps::FeedStats stats = replica_->feed_stats();
  EXPECT_GT(stats.rounds, 1u);
  EXPECT_GE(stats.rows, users.size() + items.size());
  EXPECT_EQ(stats.failures, 0u);
}

TEST_F(ReplicaTest, ALookupNeverSeesHalfARound) {
  auto store = ps::ReplicaStore::Create({Spec("user")}, 16);
  ASSERT_TRUE(store.ok());
  const std::vector<uint64_t> keys = Keys(1, 256);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int round = 1; round <= 300; ++round) {
      ps::TableChanges changes{"user", keys,
                               std::vector<float>(keys.size() * kDim, float(round)), {}};
      EXPECT_TRUE((*store)->Apply({changes}).ok());
    }
    done = true;
  });
  int mixed = 0, lookups = 0;
  std::vector<float> rows(keys.size() * kDim);
  while (!done.load() || lookups == 0) {
    ASSERT_TRUE((*store)->Lookup("user", keys, rows, MissingRows::kFlag, {}).ok());
    ++lookups;
    mixed += std::any_of(rows.begin(), rows.end(), [&](float v) { return v != rows[0]; });
  }
  writer.join();
  EXPECT_EQ(mixed, 0) << "of " << lookups << " lookups";
  EXPECT_EQ((*store)->rounds(), 300u);
}

TEST_F(ReplicaTest, FollowsPartitionsToAServerThatJoined) {
  const std::vector<uint64_t> users = Keys(1, 500);
  Push("user", users, 1.0f);
  StartReplica();
  ASSERT_TRUE(ReplicaMatches("user", users));
  auto joined = cluster_->AddServer();
  ASSERT_TRUE(joined.ok()) << joined.status().ToString();
  // Wait until every move to the new server is done, then change every row.
  const auto deadline = steady_clock::now() + std::chrono::seconds(60);
  uint32_t owned = 0;
  while (steady_clock::now() < deadline) {
    auto status = trainer_->scheduler().GetClusterStatus(Millis(5'000));
    ASSERT_TRUE(status.ok()) << status.status().ToString();
    owned = status->routing.PartitionsOwnedBy(*joined);
    if (owned > 0 && status->moves_in_flight == 0 && status->moves_planned == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_GT(owned, 0u);
  Push("user", users, -1.0f);
  EXPECT_TRUE(ReplicaMatches("user", users));
  EXPECT_GE(replica_->feed_stats().routing_changes, 1u);
}

TEST_F(ReplicaTest, RestartsFromItsDataDirectoryServingAtOnce) {
  auto scratch = ScratchDirectory::Make("ember-replica-test");
  ASSERT_TRUE(scratch.ok()) << scratch.status().ToString();
  const std::string data_dir = (*scratch)->path() + "/replica";
  const std::vector<uint64_t> users = Keys(1, 300);
  Push("user", users, 1.0f);
  StartReplica(data_dir);
  ASSERT_TRUE(ReplicaMatches("user", users));
  const auto deadline = steady_clock::now() + std::chrono::seconds(20);
  while (!replica_->ready() && steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(replica_->ready());
  const std::vector<float> copied = Rows(*reader_, "user", users);
  StopReplica();  // saves its rows (a whole copy only)
  ASSERT_TRUE(std::filesystem::exists(data_dir + "/rows/MANIFEST"));
  StartReplica(data_dir);
  EXPECT_TRUE(replica_->ready());  // before any round of the stream
  EXPECT_EQ(Rows(*reader_, "user", users), copied);
  Push("user", users, 1.0f);
  EXPECT_TRUE(ReplicaMatches("user", users));
}

}  // namespace
}  // namespace ember
