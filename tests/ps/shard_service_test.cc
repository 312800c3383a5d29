// ShardService: a push that arrives again with the same (sender, request id) is applied once,
// in memory, with a data directory, across a restart on that directory, and when deferred (bsp);
// keys pushed into a partition being copied out are sent again at its hand-over; a partition
// moves in chunks of bounded size.
#include "ps/server/shard_service.h"

#include <gtest/gtest.h>

#include <functional>
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
  explicit Service(const std::string& data_dir, const ShardPolicy& policy = {}) {
    ShardStorage storage;
    if (!data_dir.empty()) {
      embedding::RocksStoreOptions options{data_dir};
      options.log_pushes = true;
      auto store = embedding::RocksStore::Open(
          options, {{"item", embedding::EmbeddingTable::PersistedFloatsPerRow(Spec())}});
      EXPECT_TRUE(store.ok()) << store.status().ToString();
      store_ = std::move(*store);
      storage.store = store_.get();
    }
    auto service = ShardService::Create(0, {Spec()}, routing_, storage, policy);
    EXPECT_TRUE(service.ok()) << service.status().ToString();
    service_ = std::move(*service);
  }

  // The scheduler's answer to a heartbeat: the move of `partition` to server 1 is in flight.
  void PlanMoveOut(uint32_t partition) {
    service_->ApplyOrders({routing_, {}, false, {{partition, 0, 1}}, {}});
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
  const RoutingTable routing_ =
      MakeBalancedRouting(kPartitions, {{0, "tcp://127.0.0.1:1"}}, 1);
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
  EXPECT_EQ(service->counters().Get(ShardCount::kDuplicatePushes), 2u);
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
  EXPECT_EQ(service->counters().Get(ShardCount::kDuplicatePushes), 0u);
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
  EXPECT_EQ(service->counters().Get(ShardCount::kDuplicatePushes), 2u);
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
  uint64_t next_chunk = 1;
  uint32_t tables = 0;
  EXPECT_TRUE(in.Get(next_chunk) && in.Get(tables) && tables <= 1);
  EXPECT_EQ(next_chunk, 0u);  // one chunk holds it all
  if (tables == 0) return {};
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
  service.PlanMoveOut(partition);
  EXPECT_EQ(TransferredKeys(*service, partition, wire::TransferPhase::kCopy), in_partition);
  // Pushes into other partitions are not noted, nor is a copy of a push applied before.
  const std::vector<float> grads(elsewhere.size() * Spec().dim, 1.0f);
  ASSERT_TRUE(service.Push(2, {kSender, 1}, elsewhere, grads).ok());
  ASSERT_TRUE(service.Push(1, {kSender, 1}, batch.keys, batch.grads).ok());
  EXPECT_EQ(service->counters().Get(ShardCount::kDuplicatePushes), 1u);
  EXPECT_EQ(TransferredKeys(*service, partition, wire::TransferPhase::kHandover),
            std::set<uint64_t>{});
  // The move aborted; the next one notes the keys of a push into the partition.
  service->Resume(partition);
  EXPECT_EQ(TransferredKeys(*service, partition, wire::TransferPhase::kCopy), in_partition);
  ASSERT_TRUE(service.Push(3, {kSender, 3}, batch.keys, batch.grads).ok());
  EXPECT_EQ(TransferredKeys(*service, partition, wire::TransferPhase::kHandover), in_partition);
}

// Moves `partition` of `source` into `target` chunk by chunk, as a PartitionMover does, calling
// `between_chunks` after each chunk of the copy; returns how many chunks each phase took.
std::pair<int, int> MoveInChunks(ShardService& source, ShardService& target, uint32_t partition,
                                 const std::function<void()>& between_chunks) {
  std::pair<int, int> chunks{0, 0};
  for (auto phase : {wire::TransferPhase::kCopy, wire::TransferPhase::kHandover}) {
    uint64_t offset = 0;
    do {
      auto response = wire::DecodeResponse(source.Handle(
          wire::EncodePartitionTransfer({3, 1}, {partition, phase, offset}), Peer{}));
      EXPECT_TRUE(response.ok() && response->status.ok())
          << (response.ok() ? response->status.ToString() : response.status().ToString());
      auto* data = response.ok() ? std::get_if<wire::PartitionData>(&response->body) : nullptr;
      if (data == nullptr) return chunks;
      auto next = target.LoadIncoming(partition, data->bytes,
                                      phase == wire::TransferPhase::kCopy && offset == 0);
      EXPECT_TRUE(next.ok()) << next.status().ToString();
      if (!next.ok()) return chunks;
      EXPECT_TRUE(*next == 0 || *next > offset);
      offset = *next;
      ++(phase == wire::TransferPhase::kCopy ? chunks.first : chunks.second);
      if (phase == wire::TransferPhase::kCopy) between_chunks();
    } while (offset != 0);
  }
  return chunks;
}

TEST(ShardServiceMovesTest, APartitionMovesInChunksOfBoundedSizeAndArrivesBitForBit) {
  ShardPolicy policy;
  policy.transfer_chunk_bytes = 400;  // rows of 40 bytes: 10 per chunk
  Service source("", policy);
  embedding::EmbeddingTable reference(Spec(), kPartitions);  // takes the same pushes
  const uint32_t partition = 5;
  std::vector<uint64_t> keys;
  for (uint64_t key = 0; keys.size() < 95; ++key) {
    if (reference.PartitionOf(key) == partition) keys.push_back(key);
  }
  std::vector<float> grads(keys.size() * Spec().dim);
  std::iota(grads.begin(), grads.end(), -100.0f);
  ASSERT_TRUE(source.Push(1, {kSender, 1}, keys, grads).ok());
  ASSERT_TRUE(reference.Push(keys, grads).ok());
  // The target owns nothing of the partition.
  auto target = ShardService::Create(
      1, {Spec()},
      MakeBalancedRouting(kPartitions, {{0, "tcp://127.0.0.1:1"}, {1, "tcp://127.0.0.1:2"}}, 1));
  ASSERT_TRUE(target.ok());
  // Pushes into the partition while its copy is under way arrive with the hand-over.
  const std::vector<uint64_t> pushed_meanwhile = {keys[3], keys[60]};
  const std::vector<float> more(pushed_meanwhile.size() * Spec().dim, 0.25f);
  int push_id = 2;
  source.PlanMoveOut(partition);
  const auto [copy_chunks, handover_chunks] = MoveInChunks(*source, **target, partition, [&] {
    if (push_id == 5) return;
    ASSERT_TRUE(source.Push(push_id++, {kSender, 1}, pushed_meanwhile, more).ok());
    ASSERT_TRUE(reference.Push(pushed_meanwhile, more).ok());
  });
  EXPECT_EQ(copy_chunks, 10);  // 95 rows, 10 a chunk
  EXPECT_EQ(handover_chunks, 1);
  std::vector<float> moved(keys.size() * Spec().dim);
  ASSERT_TRUE(reference.Pull(keys, moved).ok());
  // Arrived, not adopted yet: a pull is asked to retry (the commit's answer may be late), not
  // told that the partition is elsewhere.
  auto early =
      wire::DecodeResponse((*target)->Handle(wire::EncodePull({1, 2}, "item", keys), Peer{}));
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(early->status.code(), StatusCode::kUnavailable) << early->status.ToString();
  EXPECT_NE(early->status.message().find("still arriving"), std::string::npos);
  (*target)->Adopt(partition, 2);
  auto response = wire::DecodeResponse((*target)->Handle(wire::EncodePull({1, 2}, "item", keys), Peer{}));
  ASSERT_TRUE(response.ok() && response->status.ok());
  auto* rows = std::get_if<std::span<const float>>(&response->body);
  ASSERT_NE(rows, nullptr);
  EXPECT_EQ(std::vector<float>(rows->begin(), rows->end()), moved);
  EXPECT_EQ((*target)->Stats().tables.at(0).rows, keys.size());
}

TEST(ShardServiceMovesTest, AChunkOutsideTheTransferUnderWayIsRefusedAndChangesNothing) {
  ShardPolicy policy;
  policy.transfer_chunk_bytes = 400;
  Service service("", policy);
  const Batch batch;
  ASSERT_TRUE(service.Push(1, {kSender, 1}, batch.keys, batch.grads).ok());
  const uint32_t partition = embedding::EmbeddingTable(Spec(), kPartitions).PartitionOf(1);
  service.PlanMoveOut(partition);
  auto transfer = [&](wire::TransferPhase phase, uint64_t offset) {
    return service.Call(wire::EncodePartitionTransfer({3, 1}, {partition, phase, offset}));
  };
  // No copy under way: neither phase has a chunk to send.
  EXPECT_EQ(transfer(wire::TransferPhase::kCopy, 3).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(transfer(wire::TransferPhase::kHandover, 3).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(service.Pull(batch.keys), Expected(batch, 1));  // still served
  ASSERT_TRUE(transfer(wire::TransferPhase::kCopy, 0).ok());
  // Beyond the copy's rows, or a hand-over chunk before the hand-over.
  const Status beyond = transfer(wire::TransferPhase::kCopy, 1000);
  EXPECT_EQ(beyond.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(beyond.message().find("at offset 1000"), std::string::npos) << beyond.ToString();
  EXPECT_EQ(transfer(wire::TransferPhase::kHandover, 1).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(service.Pull(batch.keys), Expected(batch, 1));  // served while it is copied
}

}  // namespace
}  // namespace ember::ps
