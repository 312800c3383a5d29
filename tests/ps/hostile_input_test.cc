// Requests built to hurt a running server: a pull whose reply no frame can carry, names of a
// megabyte, gradients that are not numbers. Each gets a clear error, changes nothing, and the
// server answers the next request normally.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "common/transport.h"
#include "common/wire.h"
#include "local/local_cluster.h"

namespace ember {
namespace {

constexpr uint32_t kWideDim = 4096;  // 32K keys of it already fill a reply

class HostileInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TableSpec rows;
    rows.name = "rows";
    rows.dim = 4;
    rows.seed = 1;
    rows.optimizer.kind = OptimizerKind::kAdam;  // state beside the rows, which must not change
    TableSpec wide;
    wide.name = "wide";
    wide.dim = kWideDim;
    wide.seed = 2;
    cluster_ = std::make_unique<local::LocalCluster>(std::vector<TableSpec>{rows, wide},
                                                     local::LocalClusterOptions{.num_servers = 1});
    ASSERT_TRUE(cluster_->status().ok()) << cluster_->status().ToString();
    auto socket = MakeSocket(context_, SocketKind::kDealer);
    ASSERT_TRUE(socket.ok());
    socket_ = std::move(*socket);
    ASSERT_TRUE(ConnectSocket(socket_, cluster_->server(0).endpoint()).ok());
  }

  // Sends one request frame and returns the decoded reply.
  wire::DecodedResponse Exchange(Frame frame) {
    std::vector<Frame> frames;
    frames.push_back(std::move(frame));
    EXPECT_TRUE(SendFrames(socket_, frames).ok());
    auto reply = ReceiveFrames(socket_, Millis(10000));
    EXPECT_TRUE(reply.ok()) << "no reply: " << reply.status().ToString();
    if (!reply.ok() || reply->empty()) return {};
    auto decoded = wire::DecodeResponse(std::move(reply->back()));
    EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
    return decoded.ok() ? std::move(*decoded) : wire::DecodedResponse{};
  }

  // The rows of `keys` in table `table`, as pulled.
  std::vector<float> Pull(const std::string& table, std::span<const uint64_t> keys) {
    auto reply = Exchange(wire::EncodePull({next_id_++, 1}, table, keys));
    EXPECT_TRUE(reply.status.ok()) << reply.status.ToString();
    auto* rows = std::get_if<std::span<const float>>(&reply.body);
    if (rows == nullptr) return {};
    return {rows->begin(), rows->end()};
  }

  // Rows the server holds for `table`.
  uint64_t StoredRows(const std::string& table) {
    auto reply = Exchange(wire::EncodeStatsRequest({next_id_++, 1}));
    auto* stats = std::get_if<ServerStats>(&reply.body);
    EXPECT_NE(stats, nullptr);
    if (stats == nullptr) return 0;
    for (const TableStats& t : stats->tables) {
      if (t.name == table) return t.rows;
    }
    ADD_FAILURE() << "no stats for table " << table;
    return 0;
  }

  std::unique_ptr<local::LocalCluster> cluster_;
  Context context_;
  Socket socket_;
  uint64_t next_id_ = 100;
};

TEST_F(HostileInputTest, PullTooLargeForOneReplyIsRefusedBeforeAnyRowIsMade) {
  const size_t keys_over = wire::kMaxBulkBytes / (kWideDim * sizeof(float)) + 1;
  std::vector<uint64_t> keys(keys_over);
  std::iota(keys.begin(), keys.end(), 1);
  auto reply = Exchange(wire::EncodePull({7, 1}, "wide", keys));
  EXPECT_EQ(reply.request_id, 7u);
  EXPECT_EQ(reply.status.code(), StatusCode::kInvalidArgument) << reply.status.ToString();
  const std::string message(reply.status.message());
  EXPECT_NE(message.find(std::to_string(keys_over) + " keys"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(wire::kMaxBulkBytes)), std::string::npos) << message;
  EXPECT_EQ(StoredRows("wide"), 0u);

  // The same server answers a normal pull afterwards.
  std::vector<uint64_t> few = {1, 2, 3};
  EXPECT_EQ(Pull("wide", few).size(), few.size() * kWideDim);
}

TEST_F(HostileInputTest, UnknownTableWithAMegabyteNameIsEchoedCutShort) {
  const std::string huge(size_t{1} << 20, 'n');
  std::vector<uint64_t> keys = {1};
  auto reply = Exchange(wire::EncodePull({8, 1}, huge, keys));
  EXPECT_EQ(reply.request_id, 8u);
  EXPECT_EQ(reply.status.code(), StatusCode::kNotFound);
  const std::string message(reply.status.message());
  EXPECT_LT(message.size(), 200u) << message.substr(0, 200);
  EXPECT_NE(message.find("...' (1048576 bytes)"), std::string::npos) << message.substr(0, 200);
  EXPECT_EQ(Pull("rows", keys).size(), 4u);
}

TEST_F(HostileInputTest, NonFiniteGradientsAreRefusedAndChangeNothing) {
  std::vector<uint64_t> keys = {11, 12, 13};
  std::vector<float> finite(keys.size() * 4, 0.5f);
  ASSERT_TRUE(Exchange(wire::EncodePush({next_id_++, 1}, "rows", keys, finite, 0)).status.ok());
  const std::vector<float> before = Pull("rows", keys);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> gradients = finite;
    gradients[6] = bad;  // key 12
    auto reply = Exchange(wire::EncodePush({next_id_++, 1}, "rows", keys, gradients, 0));
    EXPECT_EQ(reply.status.code(), StatusCode::kInvalidArgument) << reply.status.ToString();
    const std::string message(reply.status.message());
    EXPECT_NE(message.find("'rows'"), std::string::npos) << message;
    EXPECT_NE(message.find("key 12"), std::string::npos) << message;
    const std::vector<float> after = Pull("rows", keys);
    ASSERT_EQ(after.size(), before.size());
    EXPECT_EQ(std::memcmp(after.data(), before.data(), before.size() * sizeof(float)), 0);
  }
  // A finite push applies as before (Adam's state was not touched by the refused ones).
  ASSERT_TRUE(Exchange(wire::EncodePush({next_id_++, 1}, "rows", keys, finite, 0)).status.ok());
  EXPECT_NE(Pull("rows", keys), before);
}

}  // namespace
}  // namespace ember
