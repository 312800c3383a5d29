// The stream of changed rows a server sends serving replicas (ps/server/followers.h), through the
// wire and a ShardService: a stream starts with every row of its partitions, then carries exactly
// the rows changed since the last request (with their current values, weights only) and the keys
// deleted, in pieces of at most max_rows; nothing is lost between requests; a stream that was
// left or never started is refused so that the replica starts again; a partition the server
// gives away is reported lost; the number of streams is bounded; only readers and trainers may
// follow.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "common/hash.h"
#include "common/wire.h"
#include "ps/server/shard_service.h"

namespace ember::ps {
namespace {

constexpr uint32_t kDim = 4;
constexpr uint32_t kPartitions = 8;
constexpr uint64_t kFollower = 42;
const Peer kTrainer{PeerRole::kTrainer, "trainer-key-trainer-key-trainer-key-1234"};
const Peer kReader{PeerRole::kReader, "reader-key-reader-key-reader-key-read-12"};
const Peer kServer{PeerRole::kServer, "server-key-server-key-server-key-serv-12"};

TableSpec Spec() {
  TableSpec spec;
  spec.name = "item";
  spec.dim = kDim;
  spec.seed = 7;
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.optimizer.learning_rate = 0.1f;
  return spec;
}

std::vector<uint32_t> AllPartitions() {
  std::vector<uint32_t> all(kPartitions);
  std::iota(all.begin(), all.end(), 0u);
  return all;
}

// What a follow request was answered with, copied out of the frame.
struct Answer {
  Status status;
  std::map<uint64_t, std::vector<float>> rows;
  std::vector<uint64_t> deleted;
  std::vector<uint32_t> following, lost;
  bool more = false;
};

class FollowersTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(Limits{}); }
  // Server 0 (this one) owns every partition; server 1 (kServer's key) none.
  static RoutingTable Routing(uint64_t epoch) {
    RoutingTable routing = MakeBalancedRouting(
        kPartitions, {{0, "tcp://127.0.0.1:1", ""}, {1, "tcp://127.0.0.1:2", kServer.public_key}},
        epoch);
    routing.owners.assign(kPartitions, 0);
    return routing;
  }
  Status Transfer(uint32_t partition, wire::TransferPhase phase) {
    auto reply = wire::DecodeResponse(service_->Handle(
        wire::EncodePartitionTransfer({next_id_++, 1}, {partition, phase}), kServer));
    return reply.ok() ? reply->status : reply.status();
  }
  void Make(const Limits& limits) {
    RoutingTable routing = Routing(1);
    ShardPolicy policy;
    policy.limits = limits;
    auto service = ShardService::Create(0, {Spec()}, routing, {}, policy);
    ASSERT_TRUE(service.ok()) << service.status().ToString();
    service_ = std::move(*service);
  }
  void Push(const std::vector<uint64_t>& keys, float gradient = 1.0f) {
    const std::vector<float> grads(keys.size() * kDim, gradient);
    auto reply = wire::DecodeResponse(service_->Handle(
        wire::EncodePushSubset({next_id_++, 1}, "item", keys, grads, kDim, {}, 0,
                               RowFormat::kF32, 0, false, {}),
        kTrainer));
    ASSERT_TRUE(reply.ok() && reply->status.ok());
  }
  std::vector<float> Pulled(uint64_t key) {
    const std::vector<uint64_t> keys = {key};
    auto reply = wire::DecodeResponse(
        service_->Handle(wire::EncodeLookupSubset({next_id_++, 1}, "item", keys, {},
                                                  RowFormat::kF32, MissingRows::kFlag),
                         kTrainer));
    EXPECT_TRUE(reply.ok() && reply->status.ok());
    const auto& looked_up = std::get<wire::LookupRows>(reply->body);
    return {looked_up.rows.begin(), looked_up.rows.end()};
  }
  Answer Follow(wire::FollowRequest request, const Peer& peer = kReader) {
    if (request.follower == 0) request.follower = kFollower;
    if (request.table.empty()) request.table = "item";
    auto reply = wire::DecodeResponse(
        service_->Handle(wire::EncodeFollow({next_id_++, 1}, request), peer));
    Answer answer;
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    if (!reply.ok()) return answer;
    answer.status = reply->status;
    if (!reply->status.ok()) return answer;
    const auto& followed = std::get<wire::FollowedRows>(reply->body);
    for (size_t i = 0; i < followed.keys.size(); ++i) {
      answer.rows[followed.keys[i]] = {followed.rows.begin() + i * kDim,
                                       followed.rows.begin() + (i + 1) * kDim};
    }
    answer.deleted = {followed.deleted.begin(), followed.deleted.end()};
    answer.following = followed.following;
    answer.lost = followed.lost;
    answer.more = followed.more;
    return answer;
  }

  std::unique_ptr<ShardService> service_;
  uint64_t next_id_ = 1;
};

TEST_F(FollowersTest, AStreamStartsWholeThenCarriesExactlyTheChangedRows) {
  std::vector<uint64_t> keys(50);
  std::iota(keys.begin(), keys.end(), 1000);
  Push(keys);
  // Not started: refused, so that the replica starts it.
  EXPECT_EQ(Follow({}).status.code(), StatusCode::kFailedPrecondition);
  Answer whole = Follow({.start = AllPartitions()});
  ASSERT_TRUE(whole.status.ok()) << whole.status.ToString();
  EXPECT_EQ(whole.following, AllPartitions());
  EXPECT_FALSE(whole.more);
  ASSERT_EQ(whole.rows.size(), keys.size());
  for (uint64_t key : keys) EXPECT_EQ(whole.rows.at(key), Pulled(key)) << key;
  EXPECT_TRUE(Follow({}).rows.empty());  // nothing changed since

  // Changed rows, with their current values: pushed twice, sent once.
  const std::vector<uint64_t> changed = {1003, 1017, 5};
  Push(changed);
  Push(changed, -0.5f);
  Answer delta = Follow({});
  ASSERT_TRUE(delta.status.ok());
  ASSERT_EQ(delta.rows.size(), changed.size());
  for (uint64_t key : changed) EXPECT_EQ(delta.rows.at(key), Pulled(key)) << key;
  EXPECT_TRUE(Follow({}).rows.empty());
}

TEST_F(FollowersTest, PiecesOfMaxRowsLoseNothingEvenWhenRowsChangeBetweenThem) {
  std::vector<uint64_t> keys(300);
  std::iota(keys.begin(), keys.end(), 1);
  Push(keys);
  std::map<uint64_t, std::vector<float>> replica;
  Answer first = Follow({.start = AllPartitions(), .max_rows = 64});
  ASSERT_TRUE(first.status.ok());
  EXPECT_TRUE(first.more);
  EXPECT_LE(first.rows.size(), 64u);
  replica.insert(first.rows.begin(), first.rows.end());
  // Between the pieces, some rows change again (some sent already, some not yet).
  Push({1, 2, 150, 299});
  for (int request = 0; request < 20; ++request) {
    Answer piece = Follow({.max_rows = 64});
    ASSERT_TRUE(piece.status.ok());
    EXPECT_LE(piece.rows.size(), 64u);
    for (auto& [key, row] : piece.rows) replica[key] = row;
    if (!piece.more) break;
  }
  EXPECT_TRUE(Follow({}).rows.empty());
  ASSERT_EQ(replica.size(), keys.size());
  for (uint64_t key : keys) EXPECT_EQ(replica.at(key), Pulled(key)) << key;
}

TEST_F(FollowersTest, ALeftStreamIsForgottenAndAGivenAwayPartitionIsLost) {
  Push({1, 2, 3});
  ASSERT_TRUE(Follow({.start = AllPartitions()}).status.ok());
  ASSERT_TRUE(Follow({.leave = true}).status.ok());
  EXPECT_EQ(Follow({}).status.code(), StatusCode::kFailedPrecondition);

  ASSERT_TRUE(Follow({.start = AllPartitions()}).status.ok());
  // Partition 3 moves to server 1: while handed over it is held (neither sent nor lost)...
  service_->ApplyOrders(wire::ServerOrders{Routing(1), {}, false, {{3, 0, 1}}, {}});
  ASSERT_TRUE(Transfer(3, wire::TransferPhase::kCopy).ok());
  ASSERT_TRUE(Transfer(3, wire::TransferPhase::kHandover).ok());
  Answer held = Follow({});
  ASSERT_TRUE(held.status.ok());
  EXPECT_TRUE(held.lost.empty());
  EXPECT_EQ(std::count(held.following.begin(), held.following.end(), 3u), 1);
  // ...and once the routing table gives it away, it is lost.
  RoutingTable committed = Routing(2);
  committed.owners[3] = 1;
  service_->ApplyOrders(wire::ServerOrders{committed, {}, false, {}, {}});
  Answer after = Follow({});
  ASSERT_TRUE(after.status.ok());
  EXPECT_EQ(after.lost, std::vector<uint32_t>{3});
  EXPECT_EQ(std::count(after.following.begin(), after.following.end(), 3u), 0);
  EXPECT_TRUE(Follow({}).lost.empty());  // said once
  // Starting a partition the server does not serve reports it lost at once.
  EXPECT_EQ(Follow({.start = {3}}).lost, std::vector<uint32_t>{3});
}

TEST_F(FollowersTest, StreamsAreBoundedAndOnlyReadersAndTrainersFollow) {
  Limits limits;
  limits.followers = 1;
  Make(limits);
  ASSERT_TRUE(Follow({.start = AllPartitions()}).status.ok());
  const Answer second = Follow({.follower = 7, .start = AllPartitions()});
  EXPECT_EQ(second.status.code(), StatusCode::kResourceExhausted) << second.status.ToString();
  EXPECT_NE(second.status.message().find("limits.followers"), std::string::npos);
  EXPECT_EQ(service_->Stats().limits_hit.size(), 1u);
  // The same stream from a trainer key is fine; a server key may not follow.
  EXPECT_TRUE(Follow({}, kTrainer).status.ok());
  EXPECT_EQ(Follow({}, kServer).status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(Follow({.start = {kPartitions}}).status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Follow({.table = "nope", .start = {0}}).status.code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace ember::ps
