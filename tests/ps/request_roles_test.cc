// Who may send what: every request kind names its senders, a server refuses the rest by name and
// changes nothing, and a server takes part only in the moves the scheduler planned, with the
// target the plan names (by key), whatever a valid server key asks.
#include <gtest/gtest.h>

#include "common/grant_signature.h"
#include "common/transport_security.h"
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
const Peer kReader{PeerRole::kReader, "reader-key-reader-key-reader-key-read-12"};

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

TEST(RequestRolesTest, AReaderMayLookUpAndReadTheRoutingAndStatusOnly) {
  using wire::RequestBody;
  const std::vector<RequestBody> allowed = {
      wire::LookupRequest{}, wire::RegisterReaderRequest{}, wire::GetRoutingRequest{},
      wire::ClusterStatusRequest{}, wire::StatsRequest{}, wire::PingRequest{}};
  for (const RequestBody& body : allowed) {
    EXPECT_TRUE(wire::CheckSender(kReader, body).ok()) << wire::RequestKindName(body);
  }
  // Trainers may read too (and admins, as trainers); servers may not register as readers.
  EXPECT_TRUE(wire::CheckSender(kTrainer, RequestBody{wire::RegisterReaderRequest{}}).ok());
  EXPECT_TRUE(wire::CheckSender(kAdmin, RequestBody{wire::LookupRequest{}}).ok());
  EXPECT_FALSE(wire::CheckSender(kServerA, RequestBody{wire::RegisterReaderRequest{}}).ok());
  const std::vector<RequestBody> refused = {
      wire::PullRequest{}, wire::PushRequest{}, wire::HintRequest{},
      wire::RegisterTrainerRequest{}, wire::RegisterServerRequest{}, wire::BarrierRequest{},
      wire::TrainerClockRequest{}, wire::HeartbeatRequest{}, wire::ApplyClockRequest{},
      wire::DrainRequest{}, wire::CheckpointNowRequest{}, wire::CheckpointCutRequest{},
      wire::CheckpointRequest{"/c", CheckpointAction::kWrite},
      wire::CheckpointRequest{"/c", CheckpointAction::kRestore}, wire::PartitionTransferRequest{},
      wire::ServerHeartbeatRequest{}, wire::MoveDecisionRequest{}};
  for (const RequestBody& body : refused) {
    const Status status = wire::CheckSender(kReader, body);
    EXPECT_EQ(status.code(), StatusCode::kPermissionDenied) << wire::RequestKindName(body);
    EXPECT_NE(status.message().find("this connection is reader key 'reader-k...'"),
              std::string::npos)
        << status.ToString();
  }
}

// Server 0 owns every partition; servers 1 (kServerA's key) and 2 (kServerB's) own none.
RoutingTable Routing(uint64_t epoch = 1) {
  RoutingTable routing =
      MakeBalancedRouting(kPartitions,
                          {{0, "tcp://127.0.0.1:1", ""},
                           {1, "tcp://127.0.0.1:2", kServerA.public_key},
                           {2, "tcp://127.0.0.1:3", kServerB.public_key}},
                          epoch);
  routing.owners.assign(kPartitions, 0);
  return routing;
}

class ShardRolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto service = ShardService::Create(0, {Spec()}, Routing(), {});
    ASSERT_TRUE(service.ok()) << service.status().ToString();
    service_ = std::move(*service);
    partition_ = embedding::EmbeddingTable(Spec(), kPartitions).PartitionOf(keys_[0]);
  }
  Result<wire::DecodedResponse> Call(Frame request, const Peer& peer) {
    return wire::DecodeResponse(service_->Handle(std::move(request), peer));
  }
  Status Transfer(wire::TransferPhase phase, const Peer& peer) {
    auto reply = Call(wire::EncodePartitionTransfer({7, 0}, {partition_, phase}), peer);
    return reply.ok() ? reply->status : reply.status();
  }
  Status PullStatus() {
    auto reply = Call(wire::EncodePull({1, 1}, "item", keys_), kTrainer);
    return reply.ok() ? reply->status : reply.status();
  }
  std::vector<float> Pull(const Peer& peer) {
    auto reply = Call(wire::EncodePull({1, 1}, "item", keys_), peer);
    EXPECT_TRUE(reply.ok() && reply->status.ok()) << (reply.ok() ? reply->status.ToString() : "");
    auto* rows = reply.ok() ? std::get_if<std::span<const float>>(&reply->body) : nullptr;
    return rows ? std::vector<float>(rows->begin(), rows->end()) : std::vector<float>{};
  }
  // The scheduler's answer to a heartbeat of server 0: `routing`, and the move of partition_ to
  // server 1 in flight, planned, or neither.
  enum class Move { kNone, kPlanned, kInFlight };
  void Orders(Move move, const RoutingTable& routing = Routing()) {
    wire::ServerOrders orders{routing, {}, false, {}, {}};
    if (move == Move::kInFlight) orders.moves_out.push_back({partition_, 0, 1});
    if (move == Move::kPlanned) orders.planned_out.push_back({partition_, 0, 1});
    service_->ApplyOrders(orders);
  }

  std::unique_ptr<ShardService> service_;
  std::vector<uint64_t> keys_ = {11, 12, 13};
  uint32_t partition_ = 0;
};

TEST_F(ShardRolesTest, AServerRefusesKindsTheSendersRoleMayNotSendAndChangesNothing) {
  const std::vector<float> before = Pull(kTrainer);
  ASSERT_EQ(before.size(), keys_.size() * Spec().dim);
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

TEST_F(ShardRolesTest, AReaderLooksRowsUpAndCanNeitherCreateNorChangeThem) {
  const std::vector<uint64_t> fresh = {101, 102};
  auto lookup = Call(wire::EncodeLookupSubset({1, 1}, "item", fresh, {}, wire::RowFormat::kF32,
                                              MissingRows::kFlag),
                     kReader);
  ASSERT_TRUE(lookup.ok() && lookup->status.ok()) << (lookup.ok() ? lookup->status.ToString() : "");
  const std::vector<float> grads(fresh.size() * Spec().dim, 1.0f);
  const std::vector<Frame> writes = [&] {
    std::vector<Frame> frames;
    frames.push_back(wire::EncodePull({2, 1}, "item", fresh));
    frames.push_back(wire::EncodePushSubset({3, 1}, "item", fresh, grads, Spec().dim, {}, 0,
                                            wire::RowFormat::kF32, 0, false, {}));
    frames.push_back(wire::EncodeHintSubset({4, 1}, "item", fresh, {}, {1, 9}, 1000));
    frames.push_back(wire::EncodeCheckpoint({5, 1}, {"/nowhere", CheckpointAction::kWrite}));
    return frames;
  }();
  for (const Frame& frame : writes) {
    auto reply = Call(Frame(frame.data(), frame.size()), kReader);
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(reply->status.code(), StatusCode::kPermissionDenied) << reply->status.ToString();
  }
  EXPECT_EQ(service_->Stats().tables.at(0).rows, 0u);  // none created: lookup, refused pull
  auto stats = Call(wire::EncodeStatsRequest({6, 1}), kReader);
  ASSERT_TRUE(stats.ok());
  EXPECT_TRUE(stats->status.ok()) << stats->status.ToString();
}

TEST_F(ShardRolesTest, AServerKeyCanStartNoMoveTheSchedulerDidNotPlan) {
  const std::vector<float> before = Pull(kTrainer);
  // No move planned: a valid server key asking for every phase changes nothing.
  for (const Peer& server : {kServerA, kServerB}) {
    for (auto phase : {wire::TransferPhase::kCopy, wire::TransferPhase::kHandover}) {
      const Status refused = Transfer(phase, server);
      EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused.ToString();
      EXPECT_NE(refused.message().find("planned no move of partition " +
                                       std::to_string(partition_)),
                std::string::npos)
          << refused.ToString();
    }
    EXPECT_EQ(Transfer(wire::TransferPhase::kRelease, server).code(),
              StatusCode::kFailedPrecondition);  // owned, with no move under way
    EXPECT_TRUE(Transfer(wire::TransferPhase::kResume, server).ok());  // nothing to resume
  }
  EXPECT_EQ(service_->counters().Get(ShardCount::kTransfersRefused), 4u);
  EXPECT_EQ(Pull(kTrainer), before);
  EXPECT_EQ(service_->Stats().partitions_owned, kPartitions);
}

TEST_F(ShardRolesTest, OnlyTheTargetThePlanNamesMayMoveThePartition) {
  const std::vector<float> before = Pull(kTrainer);
  Orders(Move::kInFlight);
  // Another valid server key can neither start the planned move nor take it over.
  EXPECT_EQ(Transfer(wire::TransferPhase::kCopy, kServerB).code(), StatusCode::kPermissionDenied);
  ASSERT_TRUE(Transfer(wire::TransferPhase::kCopy, kServerA).ok());
  for (auto phase : {wire::TransferPhase::kHandover, wire::TransferPhase::kRelease,
                     wire::TransferPhase::kResume}) {
    const Status refused = Transfer(phase, kServerB);
    EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied) << refused.ToString();
    EXPECT_NE(refused.message().find("is not server 1"), std::string::npos) << refused.ToString();
  }
  // Another partition, not planned, even by the planned target.
  const uint32_t planned = partition_;
  partition_ = (planned + 1) % kPartitions;
  EXPECT_EQ(Transfer(wire::TransferPhase::kCopy, kServerA).code(), StatusCode::kUnavailable);
  partition_ = planned;
  ASSERT_TRUE(Transfer(wire::TransferPhase::kHandover, kServerA).ok());
  // The target's release before the routing table gives it the partition drops nothing.
  const Status early = Transfer(wire::TransferPhase::kRelease, kServerA);
  EXPECT_EQ(early.code(), StatusCode::kUnavailable) << early.ToString();
  EXPECT_TRUE(service_->TakeHeartbeatRequest());
  EXPECT_EQ(PullStatus().code(), StatusCode::kUnavailable);  // held while handed over
  // Nor does its resume serve the partition again before the scheduler's answer says so.
  ASSERT_TRUE(Transfer(wire::TransferPhase::kResume, kServerA).ok());
  EXPECT_EQ(PullStatus().code(), StatusCode::kUnavailable);
  Orders(Move::kNone);  // aborted: served again, rows as they were
  EXPECT_EQ(Pull(kTrainer), before);
  EXPECT_EQ(service_->counters().Get(ShardCount::kTransfersRefused), 5u);
}

TEST_F(ShardRolesTest, APartitionIsDroppedOnlyWhenTheRoutingTableGivesItAway) {
  Orders(Move::kInFlight);
  ASSERT_TRUE(Transfer(wire::TransferPhase::kCopy, kServerA).ok());
  ASSERT_TRUE(Transfer(wire::TransferPhase::kHandover, kServerA).ok());
  Orders(Move::kInFlight);  // still in flight: still held
  EXPECT_EQ(PullStatus().code(), StatusCode::kUnavailable);
  EXPECT_EQ(service_->counters().Get(ShardCount::kMovesOut), 0u);
  RoutingTable committed = Routing(2);
  committed.owners[partition_] = 1;
  Orders(Move::kNone, committed);
  EXPECT_EQ(service_->counters().Get(ShardCount::kMovesOut), 1u);
  EXPECT_EQ(PullStatus().code(), StatusCode::kFailedPrecondition);  // not owned here any more
  EXPECT_TRUE(Transfer(wire::TransferPhase::kRelease, kServerA).ok());  // repeated: no-op
  EXPECT_EQ(service_->Stats().partitions_owned, kPartitions - 1);
}

TEST_F(ShardRolesTest, AMoveToldAheadAsPlannedMayStartAndEndsWhenNotInFlight) {
  const std::vector<float> before = Pull(kTrainer);
  Orders(Move::kPlanned);
  const auto asked_before_the_copy = std::chrono::steady_clock::now();
  ASSERT_TRUE(Transfer(wire::TransferPhase::kCopy, kServerA).ok());
  // An answer to a heartbeat sent before the copy began may predate the move's start: kept.
  service_->ApplyOrders({Routing(), {}, false, {}, {{partition_, 0, 1}}}, asked_before_the_copy);
  ASSERT_TRUE(Transfer(wire::TransferPhase::kHandover, kServerA).ok());
  // One sent after it that lists the move as planned only: it was aborted; served again.
  Orders(Move::kPlanned);
  EXPECT_EQ(Pull(kTrainer), before);
  EXPECT_EQ(Transfer(wire::TransferPhase::kHandover, kServerA).code(),
            StatusCode::kFailedPrecondition);  // nothing copied any more
}

TEST_F(ShardRolesTest, AKeyCannotSilenceThePushesOfAnotherKeysSender) {
  const std::vector<float> grads(keys_.size() * Spec().dim, 1.0f);
  auto push = [&](const Peer& peer, uint64_t request_id, uint64_t acked_below) {
    auto reply = Call(wire::EncodePushSubset({request_id, 1}, "item", keys_, grads, Spec().dim,
                                             {}, 0, wire::RowFormat::kF32, 0, false,
                                             {0x5EED, acked_below}),
                      peer);
    return reply.ok() ? reply->status : reply.status();
  };
  const std::vector<float> before = Pull(kTrainer);
  ASSERT_TRUE(push(kTrainer, 1, 1).ok());
  const std::vector<float> once = Pull(kTrainer);
  EXPECT_NE(once, before);
  // Another key names the trainer's sender id with every request below 2^64-1 answered.
  const Status refused = push(kAdmin, 2, ~uint64_t{0});
  EXPECT_EQ(refused.code(), StatusCode::kPermissionDenied) << refused.ToString();
  EXPECT_EQ(Pull(kTrainer), once);
  // The trainer's next push is applied, not taken for a copy of an answered one.
  ASSERT_TRUE(push(kTrainer, 2, 2).ok());
  EXPECT_NE(Pull(kTrainer), once);
}

// bsp clocks: with authentication a server applies a clock only as the scheduler's signed grant
// says, so a trainer key can neither run its clock ahead nor choose whose pushes count.
TEST(ApplyClockGrantTest, OnlyAClockTheSchedulerSignedIsApplied) {
  auto scheduler_keys = GenerateKeyPair();
  ASSERT_TRUE(scheduler_keys.ok());
  auto signer = GrantSigner::FromSecretKey(scheduler_keys->secret_key);
  ASSERT_TRUE(signer.ok());
  ShardPolicy policy;
  policy.grant_key = signer->public_key();
  auto service = ShardService::Create(0, {Spec()}, Routing(), {}, policy);
  ASSERT_TRUE(service.ok()) << service.status().ToString();
  auto call = [&](Frame request) {
    auto reply = wire::DecodeResponse((*service)->Handle(std::move(request), kTrainer));
    return reply.ok() ? reply->status : reply.status();
  };
  const std::vector<uint64_t> keys = {11, 12, 13};
  const std::vector<float> grads(keys.size() * Spec().dim, 1.0f);
  auto push = [&](uint64_t id, uint64_t clock, uint32_t trainer) {
    return call(wire::EncodePushSubset({id, 1}, "item", keys, grads, Spec().dim, {}, clock,
                                       wire::RowFormat::kF32, trainer, /*deferred=*/true,
                                       {0xABC0 + trainer, id}));
  };
  auto apply = [&](uint64_t clock, std::vector<uint32_t> trainers, std::string signature) {
    return call(wire::EncodeApplyClock(
        {100 + clock, 1}, {clock, std::move(trainers), Combine::kMean, std::move(signature)}));
  };
  ASSERT_TRUE(push(1, 1, 0).ok());
  ASSERT_TRUE(push(2, 1, 1).ok());
  const std::vector<uint32_t> both = {0, 1};
  const std::string granted = signer->Sign({1, both, Combine::kMean});
  // Unsigned, signed for another clock, for other trainers, or with another combine rule.
  EXPECT_EQ(apply(~uint64_t{0}, {0, 1}, "").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(apply(~uint64_t{0}, {0, 1}, granted).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(apply(1, {999}, granted).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(apply(1, {0}, granted).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(call(wire::EncodeApplyClock({200, 1}, {1, {0, 1}, Combine::kSum, granted})).code(),
            StatusCode::kPermissionDenied);
  // Nothing was applied or dropped: the grant applies both pushes, and the next clock goes on.
  ASSERT_TRUE(apply(1, {0, 1}, granted).ok());
  EXPECT_TRUE(push(3, 2, 0).ok());
  EXPECT_TRUE(push(4, 2, 1).ok());
  EXPECT_TRUE(apply(2, {0, 1}, signer->Sign({2, both, Combine::kMean})).ok());
}

}  // namespace
}  // namespace ember::ps
