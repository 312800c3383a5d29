// EchoPeer: replies carry the configured size whatever the request, and the peer stops cleanly.
#include <gtest/gtest.h>

#include <chrono>

#include "common/transport.h"
#include "ps/server/echo_peer.h"

namespace ember {
namespace {

TEST(EchoPeerTest, AnswersEveryRequestWithTheConfiguredSize) {
  ps::EchoPeer peer({.bind = "tcp://127.0.0.1:*", .reply_bytes = 64 * 1024});
  ASSERT_TRUE(peer.Start().ok());
  EXPECT_NE(peer.endpoint().find("tcp://127.0.0.1:"), std::string::npos);

  Context context;
  auto socket = MakeSocket(context, SocketKind::kDealer);
  ASSERT_TRUE(socket.ok());
  ASSERT_TRUE(ConnectSocket(*socket, peer.endpoint()).ok());
  for (size_t request_bytes : {size_t{1}, size_t{8 * 1024}, size_t{300 * 1024}}) {
    std::vector<Frame> request;
    request.emplace_back(request_bytes);
    ASSERT_TRUE(SendFrames(*socket, request).ok());
    auto reply = ReceiveFrames(*socket, Millis(5000));
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    ASSERT_EQ(reply->size(), 1u);
    EXPECT_EQ(reply->front().size(), 64u * 1024);
  }
  peer.Stop();  // the peer counts a reply after sending it: read the counters once it stopped
  EXPECT_EQ(peer.requests_answered(), 3u);
  EXPECT_EQ(peer.request_bytes_received(), 1u + 8 * 1024 + 300 * 1024);
}

TEST(EchoPeerTest, EmptyReplyAndSeveralClients) {
  ps::EchoPeer peer({.bind = "tcp://127.0.0.1:*", .reply_bytes = 0});
  ASSERT_TRUE(peer.Start().ok());
  Context context;
  std::vector<Socket> sockets;
  for (int i = 0; i < 3; ++i) {
    auto socket = MakeSocket(context, SocketKind::kDealer);
    ASSERT_TRUE(socket.ok());
    ASSERT_TRUE(ConnectSocket(*socket, peer.endpoint()).ok());
    std::vector<Frame> request;
    request.emplace_back(16);
    ASSERT_TRUE(SendFrames(*socket, request).ok());
    sockets.push_back(std::move(*socket));
  }
  for (auto& socket : sockets) {
    auto reply = ReceiveFrames(socket, Millis(5000));
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    ASSERT_EQ(reply->size(), 1u);
    EXPECT_EQ(reply->front().size(), 0u);
  }
}

TEST(EchoPeerTest, StopsPromptlyAndTwice) {
  ps::EchoPeer peer({.bind = "tcp://127.0.0.1:*", .reply_bytes = 8});
  ASSERT_TRUE(peer.Start().ok());
  EXPECT_FALSE(peer.Start().ok());  // already running
  const auto start = std::chrono::steady_clock::now();
  peer.Stop();
  peer.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(EchoPeerTest, StoppingANeverStartedPeerIsHarmless) {
  ps::EchoPeer peer({.bind = "tcp://127.0.0.1:*", .reply_bytes = 8});
  peer.Stop();
}

}  // namespace
}  // namespace ember
