// A partitionTransfer release (or hand-over) for a partition a server simply owns, with no move
// under way, is refused and changes nothing: the rows stay, and so does the ownership. A handed
// over partition is dropped when the scheduler's routing table gives it away.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "embedding/embedding_table.h"
#include "ps/server/shard_service.h"

namespace ember::ps {
namespace {

constexpr uint32_t kPartitions = 8;

TableSpec Spec() {
  TableSpec spec;
  spec.name = "item";
  spec.dim = 4;
  spec.seed = 3;
  return spec;
}

class ReleaseGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto service = ShardService::Create(
        0, {Spec()}, MakeBalancedRouting(kPartitions, {{0, "tcp://127.0.0.1:1"}}, 1), {});
    ASSERT_TRUE(service.ok()) << service.status().ToString();
    service_ = std::move(*service);
    const std::vector<float> grads(keys_.size() * Spec().dim, 0.5f);
    auto pushed = wire::DecodeResponse(service_->Handle(wire::EncodePushSubset(
        {1, 1}, "item", keys_, grads, Spec().dim, {}, 0, wire::RowFormat::kF32, 0, false, {7, 1}),
        Peer{}));
    ASSERT_TRUE(pushed.ok() && pushed->status.ok());
  }

  uint32_t PartitionOfFirstKey() const {
    return embedding::EmbeddingTable(Spec(), kPartitions).PartitionOf(keys_[0]);
  }

  Status Transfer(uint32_t partition, wire::TransferPhase phase) {
    auto response = wire::DecodeResponse(
        service_->Handle(wire::EncodePartitionTransfer({2, 1}, {partition, phase}), Peer{}));
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response.ok() ? response->status : response.status();
  }

  std::vector<float> Pull() {
    auto response = wire::DecodeResponse(service_->Handle(wire::EncodePull({3, 1}, "item", keys_), Peer{}));
    EXPECT_TRUE(response.ok() && response->status.ok());
    auto* rows = response.ok() ? std::get_if<std::span<const float>>(&response->body) : nullptr;
    return rows ? std::vector<float>(rows->begin(), rows->end()) : std::vector<float>{};
  }

  std::vector<uint64_t> keys_ = {1, 2, 3, 1000, 77777};
  std::unique_ptr<ShardService> service_;
};

TEST_F(ReleaseGuardTest, ReleaseOfAnOwnedPartitionWithoutAMoveIsRefused) {
  const std::vector<float> before = Pull();
  ASSERT_EQ(before.size(), keys_.size() * Spec().dim);
  const uint32_t partition = PartitionOfFirstKey();
  // A release finds nothing handed over; a hand-over finds no move the scheduler planned.
  using wire::TransferPhase;
  for (auto [phase, code] : {std::pair{TransferPhase::kRelease, StatusCode::kFailedPrecondition},
                             std::pair{TransferPhase::kHandover, StatusCode::kUnavailable}}) {
    Status status = Transfer(partition, phase);
    EXPECT_EQ(status.code(), code) << status.ToString();
    EXPECT_NE(status.message().find("partition " + std::to_string(partition)), std::string::npos)
        << status.ToString();
  }
  EXPECT_NE(Transfer(partition, wire::TransferPhase::kRelease).message().find("owned"),
            std::string::npos);
  EXPECT_EQ(Pull(), before);
}

TEST_F(ReleaseGuardTest, AHandedOverPartitionIsDroppedOnceTheRoutingTableGivesItAway) {
  const uint32_t partition = PartitionOfFirstKey();
  RoutingTable routing =
      MakeBalancedRouting(kPartitions, {{0, "tcp://127.0.0.1:1"}, {1, "tcp://127.0.0.1:2"}}, 1);
  routing.owners.assign(kPartitions, 0);
  service_->ApplyOrders({routing, {}, false, {{partition, 0, 1}}, {}});
  ASSERT_TRUE(Transfer(partition, wire::TransferPhase::kCopy).ok());
  ASSERT_TRUE(Transfer(partition, wire::TransferPhase::kHandover).ok());
  // The target's release alone does not drop it: the scheduler has not given it away yet.
  EXPECT_EQ(Transfer(partition, wire::TransferPhase::kRelease).code(), StatusCode::kUnavailable);
  EXPECT_EQ(service_->counters().Get(ShardCount::kMovesOut), 0u);
  routing.owners[partition] = 1;
  ++routing.epoch;
  service_->ApplyOrders({routing, {}, false, {}, {}});  // committed
  EXPECT_EQ(service_->counters().Get(ShardCount::kMovesOut), 1u);
  EXPECT_TRUE(Transfer(partition, wire::TransferPhase::kRelease).ok());  // repeated: no-op
}

}  // namespace
}  // namespace ember::ps
