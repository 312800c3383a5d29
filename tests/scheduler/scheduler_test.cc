// Scheduler: forming the cluster, idempotent registration, routing hand-out, bad requests.
#include <gtest/gtest.h>

#include <thread>

#include "common/rpc_channel.h"
#include "common/transport.h"
#include "scheduler/scheduler.h"

namespace ember::scheduler {
namespace {

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerOptions options;
    options.num_servers = 2;
    options.num_partitions = 8;
    TableSpec spec;
    spec.name = "t";
    spec.dim = 2;
    options.tables.push_back(spec);
    scheduler_ = std::make_unique<Scheduler>(options);
    ASSERT_TRUE(scheduler_->Start().ok());
    thread_ = std::thread([this] { scheduler_->Run(); });
  }
  void TearDown() override {
    scheduler_->RequestStop();
    thread_.join();
  }

  Context context_;
  std::unique_ptr<Scheduler> scheduler_;
  std::thread thread_;
};

TEST_F(SchedulerTest, RegistrationWaitsForAllServersThenHandsOutRouting) {
  RpcChannel a(context_, scheduler_->endpoint()), b(context_, scheduler_->endpoint());
  RpcChannel trainer(context_, scheduler_->endpoint());
  // Before the cluster forms, the routing table is not ready and registrations wait.
  auto early = trainer.Call(1, wire::EncodeGetRouting({1, 0}), Millis(5000));
  ASSERT_TRUE(early.ok());
  EXPECT_FALSE(std::get<RoutingTable>(early->body).ready());
  auto pending = a.Call(1, wire::EncodeRegisterServer({1, 0}, "tcp://127.0.0.1:1"), Millis(200));
  EXPECT_EQ(pending.status().code(), StatusCode::kDeadlineExceeded);

  // A resent registration from the same endpoint keeps its id; the second server forms the cluster.
  std::thread first([&] {
    auto reply = a.Call(2, wire::EncodeRegisterServer({2, 0}, "tcp://127.0.0.1:1"), Millis(5000));
    ASSERT_TRUE(reply.ok());
    EXPECT_EQ(std::get<wire::Registration>(reply->body).id, 0u);
  });
  std::this_thread::sleep_for(Millis(50));
  auto second = b.Call(1, wire::EncodeRegisterServer({1, 0}, "tcp://127.0.0.1:2"), Millis(5000));
  first.join();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  const auto& registration = std::get<wire::Registration>(second->body);
  EXPECT_EQ(registration.id, 1u);
  EXPECT_EQ(registration.routing.epoch, 1u);
  EXPECT_EQ(registration.routing.servers.size(), 2u);
  ASSERT_EQ(registration.tables.size(), 1u);
  EXPECT_EQ(registration.tables[0].name, "t");

  // A third server is refused: the cluster is complete.
  RpcChannel c(context_, scheduler_->endpoint());
  auto third = c.Call(1, wire::EncodeRegisterServer({1, 0}, "tcp://127.0.0.1:3"), Millis(5000));
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->status.code(), StatusCode::kFailedPrecondition);

  auto routing = trainer.Call(2, wire::EncodeGetRouting({2, 0}), Millis(5000));
  ASSERT_TRUE(routing.ok());
  EXPECT_EQ(std::get<RoutingTable>(routing->body).epoch, 1u);
}

TEST_F(SchedulerTest, GarbageAndDataRequestsGetErrors) {
  Context context;
  auto socket = MakeSocket(context, SocketKind::kDealer);
  ASSERT_TRUE(socket.ok());
  ASSERT_TRUE(ConnectSocket(*socket, scheduler_->endpoint()).ok());
  std::vector<Frame> frames;
  frames.push_back(Frame(std::string("definitely not capnp")));
  ASSERT_TRUE(SendFrames(*socket, frames).ok());
  auto reply = ReceiveFrames(*socket, Millis(5000));
  ASSERT_TRUE(reply.ok());
  auto decoded = wire::DecodeResponse(std::move(reply->back()));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->status.code(), StatusCode::kInvalidArgument);

  RpcChannel channel(context_, scheduler_->endpoint());
  std::vector<uint64_t> keys = {1};
  auto pull = channel.Call(1, wire::EncodePull({1, 0}, "t", keys), Millis(5000));
  ASSERT_TRUE(pull.ok());
  EXPECT_EQ(pull->status.code(), StatusCode::kInvalidArgument);
  auto ping = channel.Call(2, wire::EncodePing({2, 0}), Millis(5000));
  ASSERT_TRUE(ping.ok());
  EXPECT_TRUE(ping->status.ok());
}

}  // namespace
}  // namespace ember::scheduler
