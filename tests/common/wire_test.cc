// Wire codec round trips and rejection of malformed frames.
#include <capnp/any.h>
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "common/ember.capnp.h"
#include "common/wire.h"

namespace ember::wire {
namespace {

TEST(WireTest, PullSubsetRoundTrip) {
  std::vector<uint64_t> keys = {10, 20, 30, 40, ~uint64_t{0}};
  std::vector<uint32_t> positions = {4, 1};
  auto decoded = DecodeRequest(EncodePullSubset({42, 3}, "t", keys, positions));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->header.request_id, 42u);
  EXPECT_EQ(decoded->header.epoch, 3u);
  const auto& pull = std::get<PullRequest>(decoded->body);
  ASSERT_EQ(pull.tables.size(), 1u);
  EXPECT_EQ(pull.tables[0].table, "t");
  ASSERT_EQ(pull.tables[0].keys.size(), 2u);
  EXPECT_EQ(pull.tables[0].keys[0], ~uint64_t{0});
  EXPECT_EQ(pull.tables[0].keys[1], 20u);
}

TEST(WireTest, PullOfSeveralTablesKeepsEachTablesKeysInOrder) {
  const std::vector<uint64_t> users = {1, 2, 3};
  const std::vector<uint64_t> items = {10, 20, 30, 40};
  const std::vector<uint32_t> some_items = {3, 1};
  const std::string long_name(300, 'x');  // names are small objects planned before the keys
  const KeysToSend tables[] = {
      {"user", users, {}}, {"item", items, some_items}, {long_name, {}, {}}, {"user", users, {}}};
  auto decoded = DecodeRequest(EncodePullTables({5, 2}, tables, RowFormat::kF16));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const auto& pull = std::get<PullRequest>(decoded->body);
  EXPECT_EQ(pull.row_format, RowFormat::kF16);
  ASSERT_EQ(pull.tables.size(), 4u);
  EXPECT_EQ(pull.tables[0].table, "user");
  EXPECT_EQ(std::vector<uint64_t>(pull.tables[0].keys.begin(), pull.tables[0].keys.end()), users);
  EXPECT_EQ(pull.tables[1].table, "item");
  EXPECT_EQ(std::vector<uint64_t>(pull.tables[1].keys.begin(), pull.tables[1].keys.end()),
            (std::vector<uint64_t>{40, 20}));
  EXPECT_EQ(pull.tables[2].table, long_name);
  EXPECT_TRUE(pull.tables[2].keys.empty());
  EXPECT_EQ(pull.tables[3].keys.size(), 3u);
}

TEST(WireTest, PushSubsetCarriesTheSelectedRows) {
  std::vector<uint64_t> keys = {1, 2, 3};
  std::vector<float> grads(3 * 2);
  std::iota(grads.begin(), grads.end(), 0.0f);
  std::vector<uint32_t> positions = {2, 0};
  auto decoded = DecodeRequest(EncodePushSubset({1, 1}, "t", keys, grads, 2, positions, 9));
  ASSERT_TRUE(decoded.ok());
  const auto& push = std::get<PushRequest>(decoded->body);
  EXPECT_EQ(push.clock, 9u);
  ASSERT_EQ(push.gradients.size(), 4u);
  EXPECT_EQ(push.gradients[0], 4.0f);
  EXPECT_EQ(push.gradients[1], 5.0f);
  EXPECT_EQ(push.gradients[2], 0.0f);
  EXPECT_EQ(push.gradients[3], 1.0f);
  EXPECT_EQ(push.sender.id, 0u);  // no sender given: no exactly-once record
}

TEST(WireTest, PushCarriesItsSenderAndAcknowledgedFloor) {
  std::vector<uint64_t> keys = {5};
  std::vector<float> grads = {1.0f};
  const PushSender sender{0xFEEDFACECAFEBEEFull, 17};
  auto decoded = DecodeRequest(
      EncodePushSubset({21, 2}, "t", keys, grads, 1, {}, 3, RowFormat::kF32, 4, true, sender));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->header.request_id, 21u);
  const auto& push = std::get<PushRequest>(decoded->body);
  EXPECT_EQ(push.sender.id, sender.id);
  EXPECT_EQ(push.sender.acked_below, 17u);
  EXPECT_EQ(push.trainer, 4u);
  EXPECT_TRUE(push.deferred);
  EXPECT_EQ(push.release_hint, 0u);
}

TEST(WireTest, HintAndThePushReleasingItNameTheSameHint) {
  std::vector<uint64_t> keys = {9, 8, 7, 6};
  const std::vector<uint32_t> positions = {3, 1};
  const HintId id{41, 0xABCDEF0123456789ull};
  auto hint = DecodeRequest(EncodeHintSubset({5, 2}, "user", keys, positions, id, 2500));
  ASSERT_TRUE(hint.ok()) << hint.status().ToString();
  EXPECT_EQ(RequestKindName(hint->body), "hint");
  EXPECT_EQ(SendersOf(hint->body), kTrainers);
  const auto& decoded = std::get<HintRequest>(hint->body);
  EXPECT_EQ(decoded.table, "user");
  EXPECT_EQ(std::vector<uint64_t>(decoded.keys.begin(), decoded.keys.end()),
            (std::vector<uint64_t>{6, 8}));
  EXPECT_EQ(decoded.hint, 41u);
  EXPECT_EQ(decoded.sender, id.sender);
  EXPECT_EQ(decoded.ttl_ms, 2500u);

  std::vector<float> grads = {1.0f, 2.0f, 3.0f, 4.0f};
  auto push = DecodeRequest(EncodePushSubset({6, 2}, "user", keys, grads, 1, {}, 3,
                                             RowFormat::kF32, 0, false, {id.sender, 1}, 41));
  ASSERT_TRUE(push.ok()) << push.status().ToString();
  EXPECT_EQ(std::get<PushRequest>(push->body).release_hint, 41u);

  // A hint without its ids names what is missing.
  for (const HintId& bad : {HintId{0, 5}, HintId{5, 0}}) {
    auto refused = DecodeRequest(EncodeHintSubset({7, 2}, "user", keys, {}, bad, 0));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("non-zero hint id and sender"), std::string::npos)
        << refused.status().ToString();
  }
}

// Bulk messages are built in place in recycled memory: whatever the name length and blob sizes
// (odd fp16 counts leave padding), every byte is defined, so two encodings are identical even when
// the heap was dirtied in between, and they decode to what was sent.
TEST(WireTest, BulkMessagesAreFullyDefinedInRecycledMemory) {
  for (size_t name_length : {0, 1, 7, 8, 300, 1000}) {
    for (size_t n : {0, 1, 3, 1001}) {
      const std::string table(name_length, 'x');
      std::vector<uint64_t> keys(n);
      std::iota(keys.begin(), keys.end(), uint64_t{7});
      std::vector<float> grads(n);
      std::iota(grads.begin(), grads.end(), 0.5f);
      auto encode = [&] {
        return EncodePushSubset({3, 4}, table, keys, grads, 1, {}, 11, RowFormat::kF16);
      };
      Frame first = encode();
      for (int i = 0; i < 4; ++i) {  // leave garbage where the next frame will likely be built
        std::vector<unsigned char> dirty(first.size() + 64 * i, 0xA5);
        ASSERT_EQ(dirty.back(), 0xA5);
      }
      Frame second = encode();
      ASSERT_EQ(first.size(), second.size());
      EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size()), 0)
          << "name " << name_length << " keys " << n;
      auto decoded = DecodeRequest(std::move(second));
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      const auto& push = std::get<PushRequest>(decoded->body);
      EXPECT_EQ(push.table, table);
      EXPECT_EQ(push.clock, 11u);
      ASSERT_EQ(push.keys.size(), n);
      ASSERT_EQ(push.gradients.size(), n);
      for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(push.keys[i], keys[i]);
        EXPECT_NEAR(push.gradients[i], grads[i], grads[i] * 1e-3);
      }
      auto pulled = DecodeRequest(EncodePullSubset({1, 1}, table, keys, {}));
      ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
      EXPECT_EQ(std::get<PullRequest>(pulled->body).tables.at(0).keys.size(), n);
    }
  }
}

TEST(WireTest, PullResponseAndErrorsRoundTrip) {
  auto frame = EncodePullResponse(5, 2, 3, [](std::span<float> rows) {
    rows[0] = 1;
    rows[1] = 2;
    rows[2] = 3;
    return Status::Ok();
  });
  auto decoded = DecodeResponse(std::move(frame));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->request_id, 5u);
  EXPECT_EQ(decoded->epoch, 2u);
  auto rows = std::get<std::span<const float>>(decoded->body);
  EXPECT_EQ(std::vector<float>(rows.begin(), rows.end()), (std::vector<float>{1, 2, 3}));

  auto error = DecodeResponse(EncodeStatusResponse(6, 2, NotFound("no table 'x'")));
  ASSERT_TRUE(error.ok());
  EXPECT_EQ(error->status.code(), StatusCode::kNotFound);
  EXPECT_EQ(error->status.message(), "no table 'x'");
}

TEST(WireTest, RoutingAndRegistrationRoundTrip) {
  Registration registration;
  registration.id = 2;
  TableSpec spec;
  spec.name = "users";
  spec.dim = 16;
  spec.seed = 99;
  spec.admit_after = 3;
  spec.ttl_seconds = 86400;
  spec.optimizer.kind = OptimizerKind::kFtrl;
  spec.optimizer.l1 = 0.5f;
  registration.tables.push_back(spec);
  TableSpec decayed;
  decayed.name = "items";
  decayed.dim = 8;
  decayed.optimizer.kind = OptimizerKind::kAdagrad;
  decayed.optimizer.weight_decay = 0.01f;
  registration.tables.push_back(decayed);
  registration.routing = MakeBalancedRouting(16, {{0, "tcp://a:1"}, {1, "tcp://b:2"}}, 4);
  auto decoded = DecodeResponse(EncodeRegistrationResponse(1, registration));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const auto& got = std::get<Registration>(decoded->body);
  EXPECT_EQ(got.id, 2u);
  ASSERT_EQ(got.tables.size(), 2u);
  EXPECT_EQ(got.tables[0].name, "users");
  EXPECT_EQ(got.tables[0].dim, 16u);
  EXPECT_EQ(got.tables[0].seed, 99u);
  EXPECT_EQ(got.tables[0].admit_after, 3u);
  EXPECT_EQ(got.tables[0].ttl_seconds, 86400u);
  EXPECT_EQ(got.tables[0].optimizer.kind, OptimizerKind::kFtrl);
  EXPECT_EQ(got.tables[0].optimizer.l1, 0.5f);
  EXPECT_EQ(got.tables[0].optimizer.weight_decay, 0.0f);
  EXPECT_EQ(got.tables[1].optimizer.kind, OptimizerKind::kAdagrad);
  EXPECT_EQ(got.tables[1].optimizer.weight_decay, 0.01f);
  EXPECT_EQ(got.routing.epoch, 4u);
  EXPECT_EQ(got.routing.owners, registration.routing.owners);
  EXPECT_EQ(got.routing.servers[1].endpoint, "tcp://b:2");
}

// fp16 on the wire: every value comes back within its documented rounding bound, 2^-11
// relative for normal values (and exactly for values fp16 represents).
TEST(WireTest, Fp16RowsAndGradientsStayWithinTheRoundingBound) {
  std::vector<float> values;
  for (int e = -14; e <= 15; ++e) {
    for (float m : {1.0f, 1.1f, 1.33333f, 1.5f, 1.99f}) {
      values.push_back(std::ldexp(m, e));
      values.push_back(-std::ldexp(m, e));
    }
  }
  values.push_back(0.0f);
  auto check = [&](std::span<const float> got) {
    ASSERT_EQ(got.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      EXPECT_LE(std::abs(got[i] - values[i]), std::ldexp(std::abs(values[i]), -11))
          << values[i] << " came back as " << got[i];
    }
  };
  auto pulled = DecodeResponse(EncodePullResponse(
      1, 1, values.size(),
      [&](std::span<float> rows) {
        std::copy(values.begin(), values.end(), rows.begin());
        return Status::Ok();
      },
      RowFormat::kF16));
  ASSERT_TRUE(pulled.ok()) << pulled.status().ToString();
  check(std::get<std::span<const float>>(pulled->body));

  std::vector<uint64_t> keys(values.size());
  std::iota(keys.begin(), keys.end(), 0);
  std::vector<uint32_t> positions(keys.size());
  std::iota(positions.begin(), positions.end(), 0);
  auto pushed = DecodeRequest(
      EncodePushSubset({1, 1}, "t", keys, values, 1, positions, 0, RowFormat::kF16));
  ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
  check(std::get<PushRequest>(pushed->body).gradients);
  // The frame carries 2 bytes per value: about half the fp32 frame.
  EXPECT_LT(EncodePushSubset({1, 1}, "t", keys, values, 1, positions, 0, RowFormat::kF16).size(),
            EncodePushSubset({1, 1}, "t", keys, values, 1, positions, 0).size());
}

TEST(WireTest, EveryTruncationOfARequestIsRejectedCleanly) {
  std::vector<uint64_t> keys(10, 7);
  Frame full = EncodePull({1, 1}, "table", keys);
  for (size_t cut = 0; cut < full.size(); ++cut) {
    auto decoded = DecodeRequest(Frame(full.data(), cut));
    EXPECT_FALSE(decoded.ok()) << "truncated at " << cut << " of " << full.size();
  }
}

TEST(WireTest, BalancedRoutingIsContiguousAndEven) {
  RoutingTable routing = MakeBalancedRouting(1024, {{0, "a"}, {1, "b"}, {2, "c"}}, 1);
  EXPECT_TRUE(routing.ready());
  uint32_t total = 0;
  for (uint32_t s = 0; s < 3; ++s) {
    EXPECT_GE(routing.PartitionsOwnedBy(s), 341u);
    EXPECT_LE(routing.PartitionsOwnedBy(s), 342u);
    total += routing.PartitionsOwnedBy(s);
  }
  EXPECT_EQ(total, 1024u);
  for (uint32_t p = 1; p < 1024; ++p) EXPECT_GE(routing.owners[p], routing.owners[p - 1]);
}

// ---- Every kind, each topic ----

// The body of `frame`, checked to be a T named `name` with `header`. Spans in it must not be read:
// the frame is gone.
template <typename T>
T DecodedBody(Frame frame, const RequestHeader& header, std::string_view name) {
  auto decoded = DecodeRequest(std::move(frame));
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  if (!decoded.ok()) return T{};
  EXPECT_EQ(decoded->version, kProtocolVersion);
  EXPECT_EQ(decoded->header.request_id, header.request_id);
  EXPECT_EQ(decoded->header.epoch, header.epoch);
  EXPECT_EQ(RequestKindName(decoded->body), name);
  EXPECT_TRUE(std::holds_alternative<T>(decoded->body)) << name;
  return std::holds_alternative<T>(decoded->body) ? std::get<T>(decoded->body) : T{};
}

TEST(WireTest, EveryRequestKindRoundTripsUnderItsName) {
  const RequestHeader h{0x1234567890ull, 77};
  DecodedBody<PingRequest>(EncodePing(h), h, "ping");
  DecodedBody<StatsRequest>(EncodeStatsRequest(h), h, "stats");
  DecodedBody<GetRoutingRequest>(EncodeGetRouting(h), h, "get-routing");
  DecodedBody<ClusterStatusRequest>(EncodeClusterStatusRequest(h), h, "cluster-status");
  std::vector<uint64_t> keys = {3, 1, 4};
  std::vector<float> grads = {1, 2, 3};
  EXPECT_EQ(DecodedBody<PullRequest>(EncodePull(h, "t", keys), h, "pull").tables.at(0).keys.size(),
            3u);
  EXPECT_EQ(DecodedBody<PushRequest>(EncodePush(h, "t", keys, grads, 5), h, "push").clock, 5u);
  EXPECT_EQ(DecodedBody<PushRequest>(EncodePushSubset(h, "t", keys, grads, 1, {}, 5,
                                                      RowFormat::kF32, 0, false, {}, 0, 0.125f),
                                     h, "push")
                .learning_rate,
            0.125f);

  const auto server = DecodedBody<RegisterServerRequest>(
      EncodeRegisterServer(h, "tcp://10.0.0.1:5000", true), h, "register-server");
  EXPECT_EQ(server.endpoint, "tcp://10.0.0.1:5000");
  EXPECT_TRUE(server.join);
  EXPECT_EQ(DecodedBody<RegisterTrainerRequest>(EncodeRegisterTrainer(h, "worker-3"), h,
                                                "register-trainer")
                .name,
            "worker-3");
  EXPECT_EQ(DecodedBody<RegisterReaderRequest>(EncodeRegisterReader(h, "lookup"), h,
                                               "register-reader")
                .name,
            "lookup");
  const auto barrier = DecodedBody<BarrierRequest>(EncodeBarrier(h, "start", 4), h, "barrier");
  EXPECT_EQ(barrier.name, "start");
  EXPECT_EQ(barrier.count, 4u);
  const auto apply = DecodedBody<ApplyClockRequest>(
      EncodeApplyClock(h, {9, {0, 2, 5}, Combine::kSum}), h, "apply-clock");
  EXPECT_EQ(apply.clock, 9u);
  EXPECT_EQ(apply.trainers, (std::vector<uint32_t>{0, 2, 5}));
  EXPECT_EQ(apply.combine, Combine::kSum);
  const auto clock =
      DecodedBody<TrainerClockRequest>(EncodeTrainerClock(h, {3, 12, true}), h, "trainer-clock");
  EXPECT_EQ(clock.trainer, 3u);
  EXPECT_EQ(clock.clock, 12u);
  EXPECT_TRUE(clock.leave);
  EXPECT_EQ(DecodedBody<HeartbeatRequest>(EncodeHeartbeat(h, 6), h, "heartbeat").trainer, 6u);
  EXPECT_EQ(DecodedBody<DrainRequest>(EncodeDrain(h, 2), h, "drain").server, 2u);

  EXPECT_EQ(DecodedBody<ServerHeartbeatRequest>(EncodeServerHeartbeat(h, 8), h, "server-heartbeat")
                .server,
            8u);
  const auto decision = DecodedBody<MoveDecisionRequest>(
      EncodeMoveDecision(h, {{11, 1, 2}, false, "target failed"}), h, "move-decision");
  EXPECT_EQ(decision.move, (MoveOrder{11, 1, 2}));
  EXPECT_FALSE(decision.commit);
  EXPECT_EQ(decision.reason, "target failed");
  for (auto phase : {TransferPhase::kCopy, TransferPhase::kHandover, TransferPhase::kRelease,
                     TransferPhase::kResume}) {
    const auto transfer = DecodedBody<PartitionTransferRequest>(
        EncodePartitionTransfer(h, {13, phase}), h, "partition-transfer");
    EXPECT_EQ(transfer.partition, 13u);
    EXPECT_EQ(transfer.phase, phase);
  }
  for (auto action :
       {CheckpointAction::kWrite, CheckpointAction::kRestore, CheckpointAction::kVerify}) {
    const auto checkpoint =
        DecodedBody<CheckpointRequest>(EncodeCheckpoint(h, {"/ckpt", action}), h, "checkpoint");
    EXPECT_EQ(checkpoint.dir, "/ckpt");
    EXPECT_EQ(checkpoint.action, action);
    EXPECT_EQ(checkpoint.cut, 0u);
  }
  const auto incremental = DecodedBody<CheckpointRequest>(
      EncodeCheckpoint(h, {"/ckpt", CheckpointAction::kWrite, 0x1234, 0x99, true}), h,
      "checkpoint");
  EXPECT_EQ(incremental.cut, 0x1234u);
  EXPECT_EQ(incremental.previous_cut, 0x99u);
  EXPECT_TRUE(incremental.track);
  for (bool done : {false, true}) {
    const auto cut = DecodedBody<CheckpointCutRequest>(
        EncodeCheckpointCut(h, {4, 30, done, done ? "disk full" : ""}), h, "checkpoint-cut");
    EXPECT_EQ(cut.trainer, 4u);
    EXPECT_EQ(cut.clock, 30u);
    EXPECT_EQ(cut.done, done);
    EXPECT_EQ(cut.error, done ? "disk full" : "");
  }
  const auto now =
      DecodedBody<CheckpointNowRequest>(EncodeCheckpointNow(h, {{"/now", "/before", true}}), h,
                                        "checkpoint-now");
  EXPECT_EQ(now.dir, "/now");
  EXPECT_EQ(now.after, "/before");
  EXPECT_TRUE(now.chain);
}

template <typename T>
T DecodedResponseBody(Frame frame, uint64_t request_id, uint64_t epoch) {
  auto decoded = DecodeResponse(std::move(frame));
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  if (!decoded.ok()) return T{};
  EXPECT_TRUE(decoded->status.ok());
  EXPECT_EQ(decoded->request_id, request_id);
  EXPECT_EQ(decoded->epoch, epoch);
  EXPECT_TRUE(std::holds_alternative<T>(decoded->body));
  return std::holds_alternative<T>(decoded->body) ? std::get<T>(decoded->body) : T{};
}

TEST(WireTest, EveryResponseKindRoundTrips) {
  const RoutingTable routing = MakeBalancedRouting(8, {{0, "tcp://a:1"}, {1, "tcp://b:2"}}, 6);
  DecodedResponseBody<NoPayload>(EncodeStatusResponse(1, 2, Status::Ok()), 1, 2);
  EXPECT_EQ(DecodedResponseBody<RoutingTable>(EncodeRoutingResponse(3, routing), 3, 6).owners,
            routing.owners);

  ServerStats stats;
  stats.server_id = 4;
  stats.tables.push_back(TableStats{"a", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  stats.tables.back().tracked_change_keys = 41;
  stats.tables.push_back(TableStats{"bb", 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 28, 29});
  stats.limits_hit = {{"keys_per_message", 30}, {"socket_queue", 31}};
  stats.pull_requests = 21;
  stats.push_requests = 22;
  stats.keys_pulled = 23;
  stats.keys_pushed = 24;
  stats.errors = 25;
  stats.partitions_owned = 26;
  const auto got_stats = DecodedResponseBody<ServerStats>(EncodeStatsResponse(5, 6, stats), 5, 6);
  EXPECT_EQ(got_stats.server_id, 4u);
  EXPECT_EQ(got_stats.pull_requests, 21u);
  EXPECT_EQ(got_stats.push_requests, 22u);
  EXPECT_EQ(got_stats.keys_pulled, 23u);
  EXPECT_EQ(got_stats.keys_pushed, 24u);
  EXPECT_EQ(got_stats.errors, 25u);
  EXPECT_EQ(got_stats.partitions_owned, 26u);
  ASSERT_EQ(got_stats.tables.size(), 2u);
  const TableStats& t = got_stats.tables[1];
  EXPECT_EQ(t.name, "bb");
  EXPECT_EQ(std::vector<uint64_t>({t.rows, t.bytes, t.resident_rows, t.disk_bytes, t.hits, t.misses,
                                   t.evictions, t.not_admitted, t.updates_dropped, t.expired}),
            std::vector<uint64_t>({11, 12, 13, 14, 15, 16, 17, 18, 19, 20}));
  EXPECT_EQ(t.non_finite_refused, 28u);
  EXPECT_EQ(t.non_finite_skipped, 29u);
  EXPECT_EQ(t.tracked_change_keys, 0u);
  EXPECT_EQ(got_stats.tables[0].tracked_change_keys, 41u);
  ASSERT_EQ(got_stats.limits_hit.size(), 2u);
  EXPECT_EQ(got_stats.limits_hit[1].limit, "socket_queue");
  EXPECT_EQ(got_stats.limits_hit[1].count, 31u);

  ClockGrant grant{7, {0, 1}, 6, CutInfo{9, "/cut", 3, true, 10, "/before"}};
  const auto got_grant =
      DecodedResponseBody<ClockGrant>(EncodeClockGrantResponse(7, 8, grant), 7, 8);
  EXPECT_EQ(got_grant.clock, 7u);
  EXPECT_EQ(got_grant.trainers, grant.trainers);
  EXPECT_EQ(got_grant.min_clock, 6u);
  EXPECT_EQ(got_grant.cut.clock, 9u);
  EXPECT_EQ(got_grant.cut.dir, "/cut");
  EXPECT_EQ(got_grant.cut.keep, 3u);
  EXPECT_EQ(got_grant.cut.chain, 10u);
  EXPECT_EQ(got_grant.cut.after, "/before");
  EXPECT_FALSE(got_grant.cut.coordinate);  // a grant announces a cut; arrivals coordinate

  const auto got_cut =
      DecodedResponseBody<CutInfo>(EncodeCutInfoResponse(9, 1, CutInfo{9, "/cut", 2, true, 4, "/a"}), 9, 1);
  EXPECT_EQ(got_cut.clock, 9u);
  EXPECT_EQ(got_cut.dir, "/cut");
  EXPECT_EQ(got_cut.keep, 2u);
  EXPECT_TRUE(got_cut.coordinate);
  EXPECT_EQ(got_cut.chain, 4u);
  EXPECT_EQ(got_cut.after, "/a");

  ServerOrders orders{routing, {{1, 0, 1}, {5, 1, 0}}, true, {{7, 2, 1}}, {{3, 2, 0}, {4, 2, 1}}};
  const auto got_orders =
      DecodedResponseBody<ServerOrders>(EncodeServerOrdersResponse(10, orders), 10, 6);
  EXPECT_EQ(got_orders.routing.owners, routing.owners);
  EXPECT_EQ(got_orders.moves, orders.moves);
  EXPECT_TRUE(got_orders.exit);
  EXPECT_EQ(got_orders.moves_out, orders.moves_out);
  EXPECT_EQ(got_orders.planned_out, orders.planned_out);

  ClusterStatus status{
      routing, {{0, "tcp://a:1", "live", 4}, {1, "tcp://b:2", "draining", 4}}, 1, 2, 3,
      {{"waiters", 12}}};
  const auto got_status =
      DecodedResponseBody<ClusterStatus>(EncodeClusterStatusResponse(11, status), 11, 6);
  ASSERT_EQ(got_status.servers.size(), 2u);
  EXPECT_EQ(got_status.servers[1].endpoint, "tcp://b:2");
  EXPECT_EQ(got_status.servers[1].state, "draining");
  EXPECT_EQ(got_status.servers[1].partitions, 4u);
  EXPECT_EQ(got_status.moves_in_flight, 1u);
  EXPECT_EQ(got_status.moves_planned, 2u);
  EXPECT_EQ(got_status.moves_done, 3u);
  ASSERT_EQ(got_status.limits_hit.size(), 1u);
  EXPECT_EQ(HitsOf(got_status.limits_hit, Limit::kWaiters), 12u);
}

// Partition data is built in place like pulls and pushes: every byte comes from `fill`, and a
// large reply is one frame of about its own size.
TEST(WireTest, PartitionDataIsBuiltInPlaceAndFullyDefined) {
  for (size_t n : {0, 1, 7, 8, 100001}) {
    auto encode = [n] {
      return EncodePartitionDataResponse(12, 3, n, [](std::span<uint8_t> data) {
        for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7 + 1);
      });
    };
    Frame first = encode();
    for (int i = 0; i < 4; ++i) {
      std::vector<unsigned char> dirty(first.size() + 64 * i, 0xA5);
      ASSERT_EQ(dirty.back(), 0xA5);
    }
    Frame second = encode();
    ASSERT_EQ(first.size(), second.size());
    EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size()), 0) << n << " bytes";
    EXPECT_LT(second.size(), n + 128);
    const auto data = DecodedResponseBody<PartitionData>(std::move(second), 12, 3);
    ASSERT_EQ(data.bytes.size(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(data.bytes[i], static_cast<uint8_t>(i * 7 + 1));
  }
}

// Long strings and lists are sized ahead, so a large reply is not split into segments.
TEST(WireTest, LargeRepliesStayOneSegment) {
  ServerStats stats;
  for (int i = 0; i < 200; ++i) stats.tables.push_back(TableStats{"table_" + std::to_string(i)});
  ClusterStatus status;
  status.routing = MakeBalancedRouting(4096, {{0, std::string(300, 'e')}}, 1);
  for (uint32_t i = 0; i < 200; ++i) {
    status.servers.push_back({i, "tcp://host-" + std::to_string(i) + ":5000", "live", 0});
  }
  std::vector<Frame> frames;
  frames.push_back(EncodeStatsResponse(1, 1, stats));
  frames.push_back(EncodeClusterStatusResponse(1, status));
  frames.push_back(EncodeStatusResponse(1, 1, Aborted(std::string(5000, 'm'))));
  for (Frame& frame : frames) {
    uint32_t segments_less_one = 0;
    std::memcpy(&segments_less_one, frame.data(), sizeof(segments_less_one));
    EXPECT_EQ(segments_less_one, 0u);
    EXPECT_TRUE(DecodeResponse(std::move(frame)).ok());
  }
}

// ---- Frames no encoder writes: each is rejected with what was wrong ----

template <typename Root, typename Fill>
Frame Handmade(Fill&& fill) {
  ::capnp::MallocMessageBuilder builder;
  auto root = builder.initRoot<Root>();
  fill(root);
  auto words = ::capnp::messageToFlatArray(builder);
  return Frame(words.asBytes().begin(), words.asBytes().size());
}

template <typename Decoded>
void ExpectRejected(const Result<Decoded>& decoded, std::string_view why) {
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(decoded.status().message().find(why), std::string::npos) << decoded.status().message();
}

// A frame built by `fill` and the words its rejection must contain.
template <typename Builder>
struct BadFrame {
  std::function<void(Builder)> fill;
  std::string_view why;
};

TEST(WireTest, RequestsWithUnknownNumbersOrBadArraysAreRejected) {
  using R = schema::Request::Builder;
  const BadFrame<R> cases[] = {
      {[](R r) { r.setVersion(kProtocolVersion + 1); }, "protocol version 2 is not supported"},
      {[](R r) { r.initPull().setRowFormat(static_cast<schema::RowFormat>(2)); },
       "pull asks for an unknown row format"},
      {[](R r) { r.initPull().initKeys(12); }, "pull keys holds 12 bytes, not a multiple of 8"},
      {[](R r) { r.initPull().initMoreTables(kMaxTablesPerPull); }, "a pull of 65 tables"},
      {[](R r) { r.initPush().setLearningRate(-0.5f); }, "push learning rate -0.5"},
      {[](R r) { r.initPush().setLearningRate(std::nanf("")); }, "push learning rate nan"},
      {[](R r) { r.initPull().initMoreTables(1)[0].initKeys(4); },
       "pull keys holds 4 bytes, not a multiple of 8"},
      {[](R r) {
         r.initPush().setGradientFormat(static_cast<schema::RowFormat>(5));
         r.getPush().initGradients(8);
       },
       "push gradients in unknown row format 5"},
      {[](R r) { r.initPush().initGradients(6); },
       "push gradients holds 6 bytes, not a multiple of 4"},
      {[](R r) { r.initApplyClock().setCombine(static_cast<schema::ApplyClock::Combine>(2)); },
       "apply-clock names an unknown combine rule"},
      {[](R r) { r.initApplyClock().initTrainers(5); }, "apply trainers holds 5 bytes"},
      {[](R r) { r.initCheckpoint().setAction(static_cast<schema::Checkpoint::Action>(3)); },
       "checkpoint names an unknown action"},
      {[](R r) { r.initCheckpoint().setPreviousCut(3); },
       "checkpoint names a previous cut or tracking without a cut id"},
      {[](R r) { r.initCheckpointCut().setPhase(static_cast<schema::CheckpointCut::Phase>(2)); },
       "checkpoint-cut names an unknown phase"},
      {[](R r) {
         r.initPartitionTransfer().setPhase(static_cast<schema::PartitionTransfer::Phase>(4));
       },
       "partition-transfer names an unknown phase"},
  };
  for (const auto& bad : cases) {
    ExpectRejected(DecodeRequest(Handmade<schema::Request>([&](R r) {
                     r.setVersion(kProtocolVersion);
                     bad.fill(r);
                   })),
                   bad.why);
  }
}

TEST(WireTest, ResponsesWithUnknownNumbersOrBadTablesAreRejected) {
  using R = schema::Response::Builder;
  const BadFrame<R> cases[] = {
      {[](R r) { r.setStatus(static_cast<schema::StatusCode>(11)); },
       "response carries unknown status code 11"},
      {[](R r) {
         r.setRowFormat(static_cast<schema::RowFormat>(3));
         r.initPull(8);
       },
       "pulled rows in unknown row format 3"},
      {[](R r) {
         auto spec = r.initRegistration().initTables(1)[0];
         spec.setName("t");
         spec.initOptimizer().setKind(static_cast<schema::OptimizerSpec::Kind>(4));
       },
       "table 't': unknown optimizer kind 4"},
      {[](R r) {
         auto spec = r.initRegistration().initTables(1)[0];
         spec.setName("t");
         spec.initInitializer().setKind(static_cast<schema::InitializerSpec::Kind>(3));
       },
       "table 't': unknown initializer kind 3"},
      {[](R r) { r.initRouting().initServers(2)[1].setId(5); },
       "server ids are not 0..n-1 in order"},
      {[](R r) {
         auto routing = r.initServerOrders().initRouting();
         routing.setEpoch(1);
         routing.setNumPartitions(2);
         routing.initOwners(4);
       },
       "routing table: 1 owners for 2 partitions"},
      {[](R r) {
         auto routing = r.initClusterStatus().initRouting();
         routing.initServers(1);
         const uint32_t owner = 1;
         std::memcpy(routing.initOwners(4).begin(), &owner, 4);
       },
       "routing table: owner 1 is not a known server"},
      {[](R r) { r.initClockGrant().initTrainers(3); }, "granted trainers holds 3 bytes"},
  };
  for (const auto& bad : cases) {
    ExpectRejected(DecodeResponse(Handmade<schema::Response>(bad.fill)), bad.why);
  }
}

// A list of empty structs costs Cap'n Proto a few bytes whatever its length; the decoder may only
// walk about as much as the frame holds, so millions of them are refused before any is read.
TEST(WireTest, ResponseListingMillionsOfEmptyStructsIsRefusedCheaply) {
  const Frame frame = Handmade<schema::Response>([](schema::Response::Builder r) {
    ::capnp::AnyStruct::Builder stats(r.initStats());
    stats.getPointerSection()[0].initAsListOfAnyStruct(0, 0, 5'000'000);  // `tables`
  });
  ASSERT_LT(frame.size(), 256u);  // a few words, yet it lists millions
  auto decoded = DecodeResponse(Frame(frame.data(), frame.size()));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(decoded.status().message().find("traversal limit"), std::string::npos)
      << decoded.status().message();
}

}  // namespace
}  // namespace ember::wire
