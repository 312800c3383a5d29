// Malformed and wrong requests sent straight to a running server: each gets a clear error (or is
// dropped with a log line when it cannot be decoded), and the server keeps answering.
#include <gtest/gtest.h>

#include <random>

#include "common/hash.h"
#include "common/rpc_channel.h"
#include "common/transport.h"
#include "local/local_cluster.h"

namespace ember {
namespace {

class BadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TableSpec spec;
    spec.name = "rows";
    spec.dim = 4;
    spec.seed = 1;
    cluster_ = std::make_unique<local::LocalCluster>(std::vector<TableSpec>{spec},
                                                     local::LocalClusterOptions{.num_servers = 2});
    ASSERT_TRUE(cluster_->status().ok()) << cluster_->status().ToString();
    auto socket = MakeSocket(context_, SocketKind::kDealer);
    ASSERT_TRUE(socket.ok());
    socket_ = std::move(*socket);
    ASSERT_TRUE(ConnectSocket(socket_, cluster_->server(0).endpoint()).ok());
  }

  // Sends the frames as one message and returns the decoded reply.
  wire::DecodedResponse Exchange(std::vector<Frame> frames) {
    EXPECT_TRUE(SendFrames(socket_, frames).ok());
    auto reply = ReceiveFrames(socket_, Millis(5000));
    EXPECT_TRUE(reply.ok()) << "no reply: " << reply.status().ToString();
    if (!reply.ok() || reply->empty()) return {};
    auto decoded = wire::DecodeResponse(std::move(reply->back()));
    EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
    return decoded.ok() ? std::move(*decoded) : wire::DecodedResponse{};
  }
  wire::DecodedResponse Exchange(Frame frame) {
    std::vector<Frame> frames;
    frames.push_back(std::move(frame));
    return Exchange(std::move(frames));
  }

  void ExpectStillServing() {
    const uint64_t id = next_id_++;
    auto reply = Exchange(wire::EncodePing({id, 0}));
    EXPECT_EQ(reply.request_id, id);
    EXPECT_TRUE(reply.status.ok()) << reply.status.ToString();
    std::vector<uint64_t> keys = {OwnedKey(Self())};
    auto pulled = Exchange(wire::EncodePull({next_id_++, 1}, "rows", keys));
    EXPECT_TRUE(pulled.status.ok()) << pulled.status.ToString();
  }

  // The id of the server the socket talks to (registration order decides ids).
  uint32_t Self() { return cluster_->server(0).server_id(); }

  // A key of table "rows" whose partition server `server` owns.
  uint64_t OwnedKey(uint32_t server) {
    auto client = cluster_->Connect();
    EXPECT_TRUE(client.ok());
    const RoutingTable routing = (*client)->routing();
    for (uint64_t key = 1;; ++key) {
      if (routing.OwnerOf(HashName("rows"), key) == server) return key;
    }
  }

  std::unique_ptr<local::LocalCluster> cluster_;
  Context context_;
  Socket socket_;
  uint64_t next_id_ = 100;
};

TEST_F(BadInputTest, RandomBytesGetAnErrorAndTheServerGoesOn) {
  std::mt19937_64 rng(11);
  for (size_t size : {0, 1, 7, 8, 16, 64, 1000, 100000}) {
    Frame frame(size);
    auto* bytes = static_cast<uint8_t*>(frame.data());
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(rng());
    auto reply = Exchange(std::move(frame));
    EXPECT_FALSE(reply.status.ok()) << "random frame of " << size << " bytes was accepted";
    EXPECT_EQ(reply.status.code(), StatusCode::kInvalidArgument);
  }
  ExpectStillServing();
}

TEST_F(BadInputTest, TruncatedMessagesGetAnError) {
  std::vector<uint64_t> keys(100, 5);
  Frame full = wire::EncodePull({1, 1}, "rows", keys);
  for (size_t cut : {size_t{4}, size_t{9}, full.size() / 2, full.size() - 1}) {
    Frame truncated(full.data(), cut);
    auto reply = Exchange(std::move(truncated));
    EXPECT_EQ(reply.status.code(), StatusCode::kInvalidArgument) << "cut at " << cut;
  }
  ExpectStillServing();
}

TEST_F(BadInputTest, UnknownTableIsNamed) {
  std::vector<uint64_t> keys = {1};
  auto reply = Exchange(wire::EncodePull({7, 1}, "no_such_table", keys));
  EXPECT_EQ(reply.request_id, 7u);
  EXPECT_EQ(reply.status.code(), StatusCode::kNotFound);
  EXPECT_NE(reply.status.message().find("no_such_table"), std::string::npos);
  ExpectStillServing();
}

TEST_F(BadInputTest, WrongRowDimensionIsRejectedAndNothingIsApplied) {
  std::vector<uint64_t> keys = {OwnedKey(Self())};
  auto before = Exchange(wire::EncodePull({8, 1}, "rows", keys));
  ASSERT_TRUE(before.status.ok());
  std::vector<float> before_row(std::get<std::span<const float>>(before.body).begin(),
                                std::get<std::span<const float>>(before.body).end());
  std::vector<float> grads(3, 1.0f);  // dim is 4
  auto reply = Exchange(wire::EncodePush({9, 1}, "rows", keys, grads, 0));
  EXPECT_EQ(reply.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(reply.status.message().find("dim 4"), std::string::npos) << reply.status.message();
  auto after = Exchange(wire::EncodePull({10, 1}, "rows", keys));
  ASSERT_TRUE(after.status.ok());
  auto after_row = std::get<std::span<const float>>(after.body);
  EXPECT_TRUE(std::equal(after_row.begin(), after_row.end(), before_row.begin()));
  ExpectStillServing();
}

TEST_F(BadInputTest, KeyOfAnotherServerGetsFailedPreconditionWithTheEpoch) {
  std::vector<uint64_t> keys = {OwnedKey(Self()), OwnedKey(1 - Self())};
  auto reply = Exchange(wire::EncodePull({11, 1}, "rows", keys));
  EXPECT_EQ(reply.status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(reply.epoch, 1u);
  EXPECT_NE(reply.status.message().find("epoch 1"), std::string::npos) << reply.status.message();
  ExpectStillServing();
}

TEST_F(BadInputTest, ExtraFramesAreRejected) {
  std::vector<Frame> frames;
  frames.push_back(Frame(std::string("junk")));
  frames.push_back(wire::EncodePing({12, 0}));
  auto reply = Exchange(std::move(frames));
  EXPECT_EQ(reply.status.code(), StatusCode::kInvalidArgument);
  ExpectStillServing();
}

TEST_F(BadInputTest, RequestsAServerDoesNotHandleAreNamed) {
  auto reply = Exchange(wire::EncodeRegisterTrainer({13, 0}, "x"));
  EXPECT_EQ(reply.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(reply.status.message().find("register"), std::string::npos) << reply.status.message();
  ExpectStillServing();
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

TEST_F(BadInputTest, ApplyClockWithoutTrainersIsRejectedAndServerKeepsServing) {
  const uint64_t id = next_id_++;
  auto reply = Exchange(wire::EncodeApplyClock({id, 1}, wire::ApplyClockRequest{3, {}, {}}));
  EXPECT_EQ(reply.request_id, id);
  EXPECT_EQ(reply.status.code(), StatusCode::kInvalidArgument) << reply.status.ToString();
  ExpectStillServing();
}

TEST_F(BadInputTest, DeferredPushForAnAppliedClockIsRejected) {
  std::vector<uint64_t> keys = {OwnedKey(Self())};
  std::vector<float> grads(4, 1.0f);
  auto applied = Exchange(wire::EncodeApplyClock({next_id_++, 1}, {5, {0}, Combine::kMean}));
  EXPECT_TRUE(applied.status.ok()) << applied.status.ToString();
  auto late = Exchange(wire::EncodePushSubset({next_id_++, 1}, "rows", keys, grads, 4, {}, 5,
                                              wire::RowFormat::kF32, 0, true));
  EXPECT_EQ(late.status.code(), StatusCode::kFailedPrecondition) << late.status.ToString();
  ExpectStillServing();
}

TEST_F(BadInputTest, ClockAndCutRequestsFromStrangersGetClearErrors) {
  auto to_server = Exchange(wire::EncodeTrainerClock({next_id_++, 0}, {0, 1, false}));
  EXPECT_EQ(to_server.status.code(), StatusCode::kInvalidArgument);
  ExpectStillServing();

  RpcChannel scheduler(context_, cluster_->scheduler_endpoint());
  auto call = [&](auto encode) {
    const uint64_t id = scheduler.NextRequestId();
    auto reply = scheduler.Call(id, encode(wire::RequestHeader{id, 0}), Millis(5000));
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    return reply.ok() ? reply->status : reply.status();
  };
  // Trainer 7 never registered.
  Status clock = call([](auto h) { return wire::EncodeTrainerClock(h, {7, 1, false}); });
  EXPECT_EQ(clock.code(), StatusCode::kNotFound) << clock.ToString();
  EXPECT_NE(clock.ToString().find("trainer 7"), std::string::npos) << clock.ToString();
  Status arrive = call([](auto h) { return wire::EncodeCheckpointCut(h, {7, 3, false, ""}); });
  EXPECT_EQ(arrive.code(), StatusCode::kNotFound) << arrive.ToString();
  Status done = call([](auto h) { return wire::EncodeCheckpointCut(h, {7, 3, true, ""}); });
  EXPECT_EQ(done.code(), StatusCode::kFailedPrecondition) << done.ToString();
  // Nobody is training, so there is nobody to cut a checkpoint.
  Status now = call([](auto h) { return wire::EncodeCheckpointNow(h, {{"/tmp/ember-nowhere", "", false}}); });
  EXPECT_EQ(now.code(), StatusCode::kFailedPrecondition) << now.ToString();
  EXPECT_NE(now.ToString().find("no trainer"), std::string::npos) << now.ToString();
  Status ping = call([](auto h) { return wire::EncodePing(h); });
  EXPECT_TRUE(ping.ok()) << ping.ToString();
}

}  // namespace
}  // namespace ember
