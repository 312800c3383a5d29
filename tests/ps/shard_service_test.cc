// ShardService: a push that arrives again with the same (sender, request id) is applied once,
// in memory, with a data directory, across a restart on that directory, and when deferred (bsp);
// keys pushed into a partition being copied out are sent again at its hand-over.
#include "ps/server/shard_service.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <set>

#include "common/checksummed_file.h"
#include "embedding/partition_file.h"
#include "embedding/rocks_store.h"
#include "tests/test_util.h"

namespace ember::ps {
namespace {

constexpr uint32_t kPartitions = 16;
constexpr uint64_t kSender = 0x5EED5EED5EED;

TableSpec Spec() {
  TableSpec spec;
  spec.name = "item";
  spec.dim = 4;
  spec.seed = 9;
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.optimizer.learning_rate = 0.1f;
  return spec;
}

// A one-server ShardService, with its rows in `data_dir` (logging every push) or in memory.
class Service {
 public:
  explicit Service(const std::string& data_dir) {
    ShardStorage storage;
    if (!data_dir.empty()) {
      auto store = embedding::RocksStore::Open(
          {data_dir}, {{"item", embedding::EmbeddingTable::PersistedFloatsPerRow(Spec())}});
      EXPECT_TRUE(store.ok()) << store.status().ToString();
      store_ = std::move(*store);
      storage.store = store_.get();
      storage.log_pushes = true;
    }
    auto service = ShardService::Create(
        0, {Spec()}, MakeBalancedRouting(kPartitions, {{0, "tcp://127.0.0.1:1"}}, 1), storage);
    EXPECT_TRUE(service.ok()) << service.status().ToString();
    service_ = std::move(*service);
  }

  Status Call(Frame request) {
    auto response = wire::DecodeResponse(service_->Handle(std::move(request), Peer{}));
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response.ok() ? response->status : response.status();
  }
  Status Push(uint64_t request_id, wire::PushSender sender, std::span<const uint64_t> keys,
              std::span<const float> grads, bool deferred = false, uint64_t clock = 0) {
    return Call(wire::EncodePushSubset({request_id, 1}, "item", keys, grads, Spec().dim, {}, clock,
                                       wire::RowFormat::kF32, 0, deferred, sender));
  }
  std::vector<float> Pull(std::span<const uint64_t> keys) {
    auto response = wire::DecodeResponse(service_->Handle(wire::EncodePull({1, 1}, "item", keys), Peer{}));
    EXPECT_TRUE(response.ok() && response->status.ok());
    auto* rows = response.ok() ? std::get_if<std::span<const float>>(&response->body) : nullptr;
    return rows ? std::vector<float>(rows->begin(), rows->end()) : std::vector<float>{};
  }
  ShardService& operator*() { return *service_; }
  ShardService* operator->() { return service_.get(); }

 private:
  std::unique_ptr<embedding::RocksStore> store_;  // outlives service_
  std::unique_ptr<ShardService> service_;
};

struct Batch {
  std::vector<uint64_t> keys = {1, 2, 3, 1000, 77777};
  std::vector<float> grads;
  Batch() {
    grads.resize(keys.size() * Spec().dim);
    std::iota(grads.begin(), grads.end(), -7.5f);
  }
};

// The rows of `keys` after `pushes` pushes of `batch` to a fresh table.
std::vector<float> Expected(const Batch& batch, int pushes) {
  embedding::EmbeddingTable table(Spec(), kPartitions);
  for (int i = 0; i < pushes; ++i) EXPECT_TRUE(table.Push(batch.keys, batch.grads).ok());
  std::vector<float> rows(batch.keys.size() * Spec().dim);
  EXPECT_TRUE(table.Pull(batch.keys, rows).ok());
  return rows;
}

// Param: "" (rows in memory) or "disk" (rows and records in a data directory).
class ExactlyOnceTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::string DataDir() const { return GetParam().empty() ? "" : dir_.path(); }
  testing::TempDir dir_;
};

TEST_P(ExactlyOnceTest, ResentPushIsAppliedOnceAndOtherSendersAreNotAffected) {
  Service service(DataDir());
  const Batch batch;
  for (int copy = 0; copy < 3; ++copy) {
    ASSERT_TRUE(service.Push(5, {kSender, 5}, batch.keys, batch.grads).ok());
  }
  EXPECT_EQ(service.Pull(batch.keys), Expected(batch, 1));
  EXPECT_EQ(service->duplicate_pushes(), 2u);
  // The same request id from another sender is another push.
  ASSERT_TRUE(service.Push(5, {kSender + 1, 5}, batch.keys, batch.grads).ok());
  EXPECT_EQ(service.Pull(batch.keys), Expected(batch, 2));
  // A push without a sender keeps no record: every copy is applied.
  ASSERT_TRUE(service.Push(5, {}, batch.keys, batch.grads).ok());
  ASSERT_TRUE(service.Push(5, {}, batch.keys, batch.grads).ok());
  EXPECT_EQ(service.Pull(batch.keys), Expected(batch, 4));
}

TEST_P(ExactlyOnceTest, ResentDeferredPushIsHeldOnce) {
  Service service(DataDir());
  const Batch batch;
  for (int copy = 0; copy < 2; ++copy) {
    ASSERT_TRUE(service.Push(8, {kSender, 8}, batch.keys, batch.grads, /*deferred=*/true, 1).ok());
  }
  wire::ApplyClockRequest apply{1, {0}, Combine::kSum};
  ASSERT_TRUE(service.Call(wire::EncodeApplyClock({9, 1}, apply)).ok());
  EXPECT_EQ(service.Pull(batch.keys), Expected(batch, 1));
  // A copy after the clock was applied is still a duplicate, not an error.
  EXPECT_TRUE(service.Push(8, {kSender, 9}, batch.keys, batch.grads, true, 1).ok());
}

// Ownership is checked before the ledger: a copy of an applied push that arrives after its
// partition moved away is refused (the client re-routes it), not answered as a duplicate.
TEST_P(ExactlyOnceTest, CopyOfAnAppliedPushIsRefusedAfterItsPartitionMovedAway) {
  Service service(DataDir());
  const Batch batch;
  ASSERT_TRUE(service.Push(5, {kSender, 5}, batch.keys, batch.grads).ok());
  const embedding::EmbeddingTable reference(Spec(), kPartitions);
  service->Release(reference.PartitionOf(batch.keys[0]));
  EXPECT_EQ(service.Push(5, {kSender, 5}, batch.keys, batch.grads).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(service->duplicate_pushes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Storage, ExactlyOnceTest, ::testing::Values("", "disk"),
                         [](const auto& info) { return info.param.empty() ? "Memory" : "Disk"; });

// The server restarted on its data directory (without a clean shutdown) knows which pushes it
// applied before: a copy that arrives after the restart is not applied again.
TEST(ExactlyOnceRestartTest, ResentPushAfterARestartIsNotAppliedAgain) {
  testing::TempDir dir;
  const Batch batch;
  {
    Service service(dir.path());
    ASSERT_TRUE(service.Push(5, {kSender, 5}, batch.keys, batch.grads).ok());
    ASSERT_TRUE(service.Push(6, {kSender, 5}, batch.keys, batch.grads).ok());
  }
  Service service(dir.path());
  EXPECT_EQ(service.Pull(batch.keys), Expected(batch, 2));
  ASSERT_TRUE(service.Push(6, {kSender, 5}, batch.keys, batch.grads).ok());
  ASSERT_TRUE(service.Push(5, {kSender, 5}, batch.keys, batch.grads).ok());
  EXPECT_EQ(service.Pull(batch.keys), Expected(batch, 2));
  EXPECT_EQ(service->duplicate_pushes(), 2u);
  ASSERT_TRUE(service.Push(7, {kSender, 7}, batch.keys, batch.grads).ok());
  ASSERT_TRUE(service.Push(6, {kSender, 6}, batch.keys, batch.grads).ok());  // below the floor
  EXPECT_EQ(service.Pull(batch.keys), Expected(batch, 3));
}

// The keys of the rows a partition transfer of `phase` carries (one table).
std::set<uint64_t> TransferredKeys(ShardService& service, uint32_t partition,
                                   wire::TransferPhase phase) {
  auto response = wire::DecodeResponse(
      service.Handle(wire::EncodePartitionTransfer({3, 1}, {partition, phase}), Peer{}));
  EXPECT_TRUE(response.ok() && response->status.ok());
  auto* data = response.ok() ? std::get_if<wire::PartitionData>(&response->body) : nullptr;
  if (data == nullptr) return {};
  PayloadReader in(
      std::string_view(reinterpret_cast<const char*>(data->bytes.data()), data->bytes.size()));
  uint32_t tables = 0;
  EXPECT_TRUE(in.Get(tables) && tables == 1);
  auto rows = embedding::TakePartitionRows(in, "the transfer");
  EXPECT_TRUE(rows.ok()) << rows.status().ToString();
  return rows.ok() ? std::set<uint64_t>(rows->keys.begin(), rows->keys.end())
                   : std::set<uint64_t>{};
}

TEST(ShardServiceMovesTest, KeysPushedWhileAPartitionIsCopiedAreSentAgainAtTheHandOver) {
  Service service("");
  const Batch batch;
  const embedding::EmbeddingTable reference(Spec(), kPartitions);
  const uint32_t partition = reference.PartitionOf(batch.keys[0]);
  std::set<uint64_t> in_partition;
  std::vector<uint64_t> elsewhere;
  for (uint64_t key : batch.keys) {
    if (reference.PartitionOf(key) == partition) {
      in_partition.insert(key);
    } else {
      elsewhere.push_back(key);
    }
  }
  ASSERT_TRUE(service.Push(1, {kSender, 1}, batch.keys, batch.grads).ok());
  EXPECT_EQ(TransferredKeys(*service, partition, wire::TransferPhase::kCopy), in_partition);
  // Pushes into other partitions are not noted, nor is a copy of a push applied before.
  const std::vector<float> grads(elsewhere.size() * Spec().dim, 1.0f);
  ASSERT_TRUE(service.Push(2, {kSender, 1}, elsewhere, grads).ok());
  ASSERT_TRUE(service.Push(1, {kSender, 1}, batch.keys, batch.grads).ok());
  EXPECT_EQ(service->duplicate_pushes(), 1u);
  EXPECT_EQ(TransferredKeys(*service, partition, wire::TransferPhase::kHandover),
            std::set<uint64_t>{});
  // The move aborted; the next one notes the keys of a push into the partition.
  service->Resume(partition);
  EXPECT_EQ(TransferredKeys(*service, partition, wire::TransferPhase::kCopy), in_partition);
  ASSERT_TRUE(service.Push(3, {kSender, 3}, batch.keys, batch.grads).ok());
  EXPECT_EQ(TransferredKeys(*service, partition, wire::TransferPhase::kHandover), in_partition);
}

}  // namespace
}  // namespace ember::ps
