// The transport's queue limit (limits.socket_queue): a send to a peer whose queue is full fails
// with ResourceExhausted naming the limit, from a DEALER and from a ROUTER alike (a ROUTER does
// not drop silently), leaves the message to be sent again, and works again once the peer reads.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "common/transport.h"

namespace ember {
namespace {

constexpr int kQueue = 2;
constexpr int kMaxSends = 1000;  // far beyond what two queues of kQueue hold

// Sends `make()` until a send fails or kMaxSends went; the failure and how many were sent.
template <typename Make>
std::pair<Status, int> SendUntilRefused(Socket& socket, Make make) {
  for (int sent = 0; sent < kMaxSends; ++sent) {
    std::vector<Frame> frames = make();
    Status status = SendFrames(socket, frames);
    if (!status.ok()) return {status, sent};
  }
  return {Status::Ok(), kMaxSends};
}

// Sends `make()` until it goes through (the peer's read reaches the sender as a command, not at
// once), trying at most 500 times 10 ms apart.
template <typename Make>
Status SendOnceThereIsRoom(Socket& socket, Make make) {
  Status status;
  for (int attempt = 0; attempt < 500; ++attempt) {
    std::vector<Frame> frames = make();
    status = SendFrames(socket, frames);
    if (status.ok()) return status;
    std::this_thread::sleep_for(Millis(10));
  }
  return status;
}

std::vector<Frame> Message(std::string_view text) {
  std::vector<Frame> frames;
  frames.emplace_back(text);
  return frames;
}

// A ROUTER and a DEALER connected in process, their queues limited to kQueue messages.
class TransportQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    context_.set_queue_limit(kQueue);
    auto router = MakeSocket(context_, SocketKind::kRouter);
    auto dealer = MakeSocket(context_, SocketKind::kDealer);
    ASSERT_TRUE(router.ok() && dealer.ok());
    router_ = std::move(*router);
    dealer_ = std::move(*dealer);
    ASSERT_TRUE(BindSocket(router_, "inproc://queue").ok());
    ASSERT_TRUE(ConnectSocket(dealer_, "inproc://queue").ok());
  }

  Context context_;
  Socket router_, dealer_;
};

TEST_F(TransportQueueTest, ADealerSendToAFullQueueFailsAndWorksOnceThePeerReads) {
  Socket* router = &router_;
  Socket* dealer = &dealer_;
  auto [refused, sent] = SendUntilRefused(*dealer, [] { return Message("request"); });
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused.ToString();
  EXPECT_NE(refused.message().find("limits.socket_queue"), std::string::npos);
  EXPECT_GE(sent, 1);
  EXPECT_LE(sent, 2 * kQueue);

  // The peer reads everything queued; the sender's next message goes through.
  for (int i = 0; i < sent; ++i) ASSERT_TRUE(ReceiveFrames(*router, Millis(5000)).ok());
  const Status again = SendOnceThereIsRoom(*dealer, [] { return Message("again"); });
  EXPECT_TRUE(again.ok()) << again.ToString();
}

TEST_F(TransportQueueTest, ARouterSendToAPeerThatDoesNotReadFailsInsteadOfDropping) {
  Socket* router = &router_;
  Socket* dealer = &dealer_;
  std::vector<Frame> hello = Message("hello");
  ASSERT_TRUE(SendFrames(*dealer, hello).ok());
  auto request = ReceiveFrames(*router, Millis(5000));
  ASSERT_TRUE(request.ok() && request->size() == 2);
  const std::string identity(static_cast<const char*>((*request)[0].data()),
                             (*request)[0].size());

  auto reply = [&] {
    std::vector<Frame> frames;
    frames.emplace_back(identity);
    frames.emplace_back(std::string_view("reply"));
    return frames;
  };
  auto [refused, sent] = SendUntilRefused(*router, reply);
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused.ToString();
  EXPECT_LE(sent, 2 * kQueue);
  for (int i = 0; i < sent; ++i) ASSERT_TRUE(ReceiveFrames(*dealer, Millis(5000)).ok());
  const Status again = SendOnceThereIsRoom(*router, reply);
  EXPECT_TRUE(again.ok()) << again.ToString();

  // A peer that is not connected is an error too, not a silent drop.
  std::vector<Frame> stranger;
  stranger.emplace_back(std::string_view("nobody"));
  stranger.emplace_back(std::string_view("reply"));
  EXPECT_EQ(SendFrames(*router, stranger).code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace ember
