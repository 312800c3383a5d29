// Wire codec round trips and rejection of malformed frames.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

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
  EXPECT_EQ(pull.table, "t");
  ASSERT_EQ(pull.keys.size(), 2u);
  EXPECT_EQ(pull.keys[0], ~uint64_t{0});
  EXPECT_EQ(pull.keys[1], 20u);
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
      EXPECT_EQ(std::get<PullRequest>(pulled->body).keys.size(), n);
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
  registration.routing = MakeBalancedRouting(16, {{0, "tcp://a:1"}, {1, "tcp://b:2"}}, 4);
  auto decoded = DecodeResponse(EncodeRegistrationResponse(1, registration));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  const auto& got = std::get<Registration>(decoded->body);
  EXPECT_EQ(got.id, 2u);
  ASSERT_EQ(got.tables.size(), 1u);
  EXPECT_EQ(got.tables[0].name, "users");
  EXPECT_EQ(got.tables[0].dim, 16u);
  EXPECT_EQ(got.tables[0].seed, 99u);
  EXPECT_EQ(got.tables[0].admit_after, 3u);
  EXPECT_EQ(got.tables[0].ttl_seconds, 86400u);
  EXPECT_EQ(got.tables[0].optimizer.kind, OptimizerKind::kFtrl);
  EXPECT_EQ(got.tables[0].optimizer.l1, 0.5f);
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

}  // namespace
}  // namespace ember::wire
