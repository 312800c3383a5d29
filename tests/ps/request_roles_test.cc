// Who may send what: every request kind names its senders, a server refuses the rest by name and
// changes nothing, and only the server that copies a partition may go on with its move.
#include <gtest/gtest.h>

#include "common/wire.h"
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

const Peer kTrainer{PeerRole::kTrainer, "trainer-key-trainer-key-trainer-key-1234"};
const Peer kAdmin{PeerRole::kAdmin, "admin-key-admin-key-admin-key-admin-1234"};
const Peer kServerA{PeerRole::kServer, "server-a-server-a-server-a-server-a-1234"};
const Peer kServerB{PeerRole::kServer, "server-b-server-b-server-b-server-b-1234"};

TEST(RequestRolesTest, EachKindNamesWhoMaySendIt) {
  using wire::RequestBody;
  EXPECT_EQ(wire::SendersOf(RequestBody{wire::PullRequest{}}), kTrainers);
  EXPECT_EQ(wire::SendersOf(RequestBody{wire::DrainRequest{}}), kAdmins);
  EXPECT_EQ(wire::SendersOf(RequestBody{wire::PartitionTransferRequest{}}), kServers);
  EXPECT_EQ(wire::SendersOf(RequestBody{wire::ClusterStatusRequest{}}), kAnyRole);
  EXPECT_EQ(wire::SendersOf(RequestBody{wire::HintRequest{}}), kTrainers);
  EXPECT_EQ(wire::SendersOf(RequestBody{wire::CheckpointRequest{"/c", CheckpointAction::kWrite}}),
            kTrainers);
  EXPECT_EQ(
      wire::SendersOf(RequestBody{wire::CheckpointRequest{"/c", CheckpointAction::kRestore}}),
      kAdmins);

  // Admin keys may do what trainers do; nobody else may do another role's work.
  EXPECT_TRUE(wire::CheckSender(kAdmin, RequestBody{wire::PullRequest{}}).ok());
  EXPECT_TRUE(wire::CheckSender(kAdmin, RequestBody{wire::DrainRequest{}}).ok());
  EXPECT_FALSE(wire::CheckSender(kAdmin, RequestBody{wire::RegisterServerRequest{}}).ok());
  EXPECT_FALSE(wire::CheckSender(kServerA, RequestBody{wire::PushRequest{}}).ok());
  EXPECT_FALSE(wire::CheckSender(kServerA, RequestBody{wire::HintRequest{}}).ok());
  EXPECT_TRUE(wire::CheckSender(Peer{}, RequestBody{wire::DrainRequest{}}).ok());  // no auth
  const Status refused = wire::CheckSender(kTrainer, RequestBody{wire::DrainRequest{}});
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(refused.message().find("'drain' request needs the role admin"), std::string::npos)
      << refused.ToString();
  EXPECT_NE(refused.message().find("trainer key 'trainer-...'"), std::string::npos)
      << refused.ToString();
}

class ShardRolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto service = ShardService::Create(
        0, {Spec()}, MakeBalancedRouting(kPartitions, {{0, "tcp://127.0.0.1:1"}}, 1), {});
    ASSERT_TRUE(service.ok()) << service.status().ToString();
    service_ = std::move(*service);
  }
  Result<wire::DecodedResponse> Call(Frame request, const Peer& peer) {
    return wire::DecodeResponse(service_->Handle(std::move(request), peer));
  }
  Status Transfer(wire::TransferPhase phase, const Peer& peer) {
    auto reply = Call(wire::EncodePartitionTransfer({7, 0}, {partition_, phase}), peer);
    return reply.ok() ? reply->status : reply.status();
  }
  std::vector<float> Pull(const Peer& peer) {
    auto reply = Call(wire::EncodePull({1, 1}, "item", keys_), peer);
    EXPECT_TRUE(reply.ok() && reply->status.ok()) << (reply.ok() ? reply->status.ToString() : "");
    auto* rows = reply.ok() ? std::get_if<std::span<const float>>(&reply->body) : nullptr;
    return rows ? std::vector<float>(rows->begin(), rows->end()) : std::vector<float>{};
  }

  std::unique_ptr<ShardService> service_;
  std::vector<uint64_t> keys_ = {11, 12, 13};
  uint32_t partition_ = 0;
};

TEST_F(ShardRolesTest, AServerRefusesKindsTheSendersRoleMayNotSendAndChangesNothing) {
  const std::vector<float> before = Pull(kTrainer);
  ASSERT_EQ(before.size(), keys_.size() * Spec().dim);
  partition_ = embedding::EmbeddingTable(Spec(), kPartitions).PartitionOf(keys_[0]);
  const std::vector<float> grads(keys_.size() * Spec().dim, 1.0f);
  auto push = Call(wire::EncodePushSubset({2, 1}, "item", keys_, grads, Spec().dim, {}, 0,
                                          wire::RowFormat::kF32, 0, false, {}),
                   kServerA);
  ASSERT_TRUE(push.ok());
  EXPECT_EQ(push->status.code(), StatusCode::kPermissionDenied) << push->status.ToString();
  // A trainer may not release (erase) a partition, nor restore rows over the table.
  EXPECT_EQ(Transfer(wire::TransferPhase::kCopy, kTrainer).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(Transfer(wire::TransferPhase::kRelease, kTrainer).code(),
            StatusCode::kPermissionDenied);
  auto restore = Call(wire::EncodeCheckpoint({3, 1}, {"/nowhere", CheckpointAction::kRestore}),
                      kTrainer);
  ASSERT_TRUE(restore.ok());
  EXPECT_EQ(restore->status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(Pull(kAdmin), before);
}

TEST_F(ShardRolesTest, OnlyTheServerCopyingAPartitionMayGoOnWithItsMove) {
  partition_ = embedding::EmbeddingTable(Spec(), kPartitions).PartitionOf(keys_[0]);
  const std::vector<float> before = Pull(kTrainer);
  ASSERT_TRUE(Transfer(wire::TransferPhase::kCopy, kServerA).ok());
  // Another server can neither take the move over nor end it.
  for (auto phase : {wire::TransferPhase::kHandover, wire::TransferPhase::kRelease,
                     wire::TransferPhase::kResume}) {
    const Status refused = Transfer(phase, kServerB);
    EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied) << refused.ToString();
    EXPECT_NE(refused.message().find("partition " + std::to_string(partition_)),
              std::string::npos);
  }
  ASSERT_TRUE(Transfer(wire::TransferPhase::kHandover, kServerA).ok());
  EXPECT_EQ(Transfer(wire::TransferPhase::kRelease, kServerB).code(),
            StatusCode::kPermissionDenied);
  ASSERT_TRUE(Transfer(wire::TransferPhase::kResume, kServerA).ok());  // the move aborted
  EXPECT_EQ(Pull(kTrainer), before);
  // With no move under way, a release is refused whoever sends it: the rows stay.
  EXPECT_EQ(Transfer(wire::TransferPhase::kRelease, kServerB).code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(Pull(kTrainer), before);
}

}  // namespace
}  // namespace ember::ps
