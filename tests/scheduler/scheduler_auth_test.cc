// Scheduler with authentication: each request kind only from its role, and a member's heartbeats,
// clocks and move decisions only from the key that registered it. Every socket is on loopback.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "common/rpc_channel.h"
#include "common/transport.h"
#include "scheduler/scheduler.h"

namespace ember::scheduler {
namespace {

// A peer of the scheduler with its own key pair and context.
struct KeyedPeer {
  KeyPair keys;
  std::unique_ptr<Context> context;
  std::unique_ptr<RpcChannel> channel;
  uint64_t next_id = 1;

  Status Call(const std::function<Frame(const wire::RequestHeader&)>& encode) {
    const uint64_t id = next_id++;
    auto reply = channel->Call(id, encode({id, 0}), Millis(10'000));
    return reply.ok() ? reply->status : reply.status();
  }
};

class SchedulerAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (auto* peer : {&server_a_, &server_b_, &trainer_1_, &trainer_2_, &admin_}) {
      peer->keys = *GenerateKeyPair();
    }
    SchedulerOptions options;
    options.num_servers = 1;
    options.num_partitions = 8;
    TableSpec spec;
    spec.name = "t";
    spec.dim = 2;
    options.tables.push_back(spec);
    options.security.own = *GenerateKeyPair();
    options.security.trusted = {{"server-a", server_a_.keys.public_key, PeerRole::kServer},
                                {"server-b", server_b_.keys.public_key, PeerRole::kServer},
                                {"trainer-1", trainer_1_.keys.public_key, PeerRole::kTrainer},
                                {"trainer-2", trainer_2_.keys.public_key, PeerRole::kTrainer},
                                {"admin", admin_.keys.public_key, PeerRole::kAdmin}};
    const std::string scheduler_key = options.security.own.public_key;
    scheduler_ = std::make_unique<Scheduler>(options);
    ASSERT_TRUE(scheduler_->Start().ok());
    thread_ = std::thread([this] { scheduler_->Run(); });
    for (auto* peer : {&server_a_, &server_b_, &trainer_1_, &trainer_2_, &admin_}) {
      peer->context =
          std::make_unique<Context>(1, TransportSecurity{peer->keys, scheduler_key, {}, false});
      peer->channel =
          std::make_unique<RpcChannel>(*peer->context, scheduler_->endpoint(), scheduler_key);
    }
  }
  void TearDown() override {
    scheduler_->RequestStop();
    thread_.join();
  }

  KeyedPeer server_a_, server_b_, trainer_1_, trainer_2_, admin_;
  std::unique_ptr<Scheduler> scheduler_;
  std::thread thread_;
};

TEST_F(SchedulerAuthTest, MembersAreBoundToTheKeysThatRegisteredThem) {
  // Roles: a trainer cannot register as a server, nor drain.
  EXPECT_EQ(trainer_1_.Call([](auto& h) { return wire::EncodeRegisterServer(h, "tcp://127.0.0.1:9"); })
                .code(),
            StatusCode::kPermissionDenied);
  ASSERT_TRUE(server_a_.Call([](auto& h) { return wire::EncodeRegisterServer(h, "tcp://127.0.0.1:1"); })
                  .ok());
  ASSERT_TRUE(trainer_1_.Call([](auto& h) { return wire::EncodeRegisterTrainer(h, "one"); }).ok());
  ASSERT_TRUE(trainer_2_.Call([](auto& h) { return wire::EncodeRegisterTrainer(h, "two"); }).ok());
  EXPECT_EQ(trainer_1_.Call([](auto& h) { return wire::EncodeDrain(h, 0); }).code(),
            StatusCode::kPermissionDenied);

  // Trainer 2's key cannot speak for trainer 0 (registered by trainer 1's key), nor take its name.
  const Status beat = trainer_2_.Call([](auto& h) { return wire::EncodeHeartbeat(h, 0); });
  EXPECT_EQ(beat.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(beat.message().find("trainer 0"), std::string::npos) << beat.ToString();
  EXPECT_EQ(trainer_2_.Call([](auto& h) {
                  return wire::EncodeTrainerClock(h, {0, 0, /*leave=*/true});
                }).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(trainer_2_.Call([](auto& h) { return wire::EncodeRegisterTrainer(h, "one"); }).code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(trainer_1_.Call([](auto& h) { return wire::EncodeHeartbeat(h, 0); }).ok());

  // Another server's key cannot heartbeat for server 0 or commit a move into it.
  EXPECT_EQ(server_b_.Call([](auto& h) { return wire::EncodeServerHeartbeat(h, 0); }).code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(server_b_.Call([](auto& h) {
                  return wire::EncodeMoveDecision(h, {{1, 0, 0}, /*commit=*/true, ""});
                }).code(),
            StatusCode::kPermissionDenied);
  EXPECT_TRUE(server_a_.Call([](auto& h) { return wire::EncodeServerHeartbeat(h, 0); }).ok());

  // Nothing changed: trainer 0 is still a member (its leave was refused), and an admin may read
  // the status and act as a trainer.
  EXPECT_TRUE(admin_.Call([](auto& h) { return wire::EncodeClusterStatusRequest(h); }).ok());
  EXPECT_TRUE(trainer_1_.Call([](auto& h) {
                  return wire::EncodeTrainerClock(h, {0, 1, /*leave=*/false});
                }).ok());
}

TEST_F(SchedulerAuthTest, ATrustedKeysNameIsReservedForThatKey) {
  ASSERT_TRUE(server_a_
                  .Call([](auto& h) { return wire::EncodeRegisterServer(h, "tcp://127.0.0.1:1"); })
                  .ok());
  // "trainer-1" is trainer 1's key's name: trainer 2's key cannot take it first.
  const Status squat =
      trainer_2_.Call([](auto& h) { return wire::EncodeRegisterTrainer(h, "trainer-1"); });
  EXPECT_EQ(squat.code(), StatusCode::kPermissionDenied) << squat.ToString();
  EXPECT_NE(squat.message().find("reserved"), std::string::npos) << squat.ToString();
  EXPECT_EQ(
      trainer_1_.Call([](auto& h) { return wire::EncodeRegisterTrainer(h, "server-a"); }).code(),
      StatusCode::kPermissionDenied);
  EXPECT_TRUE(
      trainer_1_.Call([](auto& h) { return wire::EncodeRegisterTrainer(h, "trainer-1"); }).ok());
  EXPECT_TRUE(
      trainer_2_.Call([](auto& h) { return wire::EncodeRegisterTrainer(h, "any-name"); }).ok());
}

}  // namespace
}  // namespace ember::scheduler
