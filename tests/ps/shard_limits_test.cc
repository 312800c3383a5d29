// A server's limits, each driven over a small configured value: keys per message, tables per
// server, held bsp pushes, push-ledger senders, and the non-finite gradient policy both ways.
// Each refusal names the limit and its config key, is counted in the stats, changes no row, and
// the service answers the next request.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "common/rpc_channel.h"
#include "local/local_cluster.h"
#include "ps/client/client.h"
#include "ps/client/server_calls.h"
#include "ps/server/shard_service.h"

namespace ember::ps {
namespace {

constexpr uint32_t kDim = 2;
constexpr uint32_t kPartitions = 8;

TableSpec Spec(const std::string& name = "item") {
  TableSpec spec;
  spec.name = name;
  spec.dim = kDim;
  spec.seed = 3;
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = 1.0f;
  return spec;
}

Result<std::unique_ptr<ShardService>> MakeService(const ShardPolicy& policy,
                                                  std::vector<TableSpec> tables = {Spec()}) {
  return ShardService::Create(0, tables,
                              MakeBalancedRouting(kPartitions, {{0, "tcp://127.0.0.1:1"}}, 1), {},
                              policy);
}

// A one-server ShardService with `policy`, called in process.
class LimitedService {
 public:
  explicit LimitedService(const ShardPolicy& policy) {
    auto service = MakeService(policy);
    EXPECT_TRUE(service.ok()) << service.status().ToString();
    if (service.ok()) service_ = std::move(*service);
  }

  Status Call(Frame request) {
    auto response = wire::DecodeResponse(service_->Handle(std::move(request), Peer{}));
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response.ok() ? response->status : response.status();
  }
  Status Push(std::span<const uint64_t> keys, std::span<const float> grads,
              wire::PushSender sender = {}, bool deferred = false, uint64_t clock = 0) {
    return Call(wire::EncodePushSubset({++request_id_, 1}, "item", keys, grads, kDim, {}, clock,
                                       wire::RowFormat::kF32, 0, deferred, sender));
  }
  Status ApplyClock(uint64_t clock) {
    return Call(wire::EncodeApplyClock({++request_id_, 1}, {clock, {0}, Combine::kSum}));
  }
  Result<std::vector<float>> Pull(std::span<const uint64_t> keys) {
    auto response = wire::DecodeResponse(
        service_->Handle(wire::EncodePull({++request_id_, 1}, "item", keys), Peer{}));
    if (!response.ok()) return response.status();
    if (!response->status.ok()) return response->status;
    auto* rows = std::get_if<std::span<const float>>(&response->body);
    if (rows == nullptr) return Internal("a pull answered without rows");
    return std::vector<float>(rows->begin(), rows->end());
  }
  wire::ServerStats Stats() { return service_->Stats(); }
  uint64_t Hits(Limit limit) { return HitsOf(Stats().limits_hit, limit); }

 private:
  std::unique_ptr<ShardService> service_;
  uint64_t request_id_ = 0;
};

std::vector<uint64_t> Keys(size_t n, uint64_t first = 1) {
  std::vector<uint64_t> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = first + i;
  return keys;
}

std::vector<float> Grads(size_t n, float value = 1.0f) {
  return std::vector<float>(n * kDim, value);
}

void ExpectRefusedFor(const Status& status, const std::string& key, uint64_t value) {
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_NE(status.message().find("limits." + key), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find("limit of " + std::to_string(value)), std::string::npos)
      << status.ToString();
}

TEST(ShardLimitsTest, PullAndPushWithTooManyKeysAreRefusedAndCounted) {
  ShardPolicy policy;
  policy.limits.keys_per_message = 4;
  LimitedService service(policy);
  const std::vector<uint64_t> four = Keys(4), five = Keys(5);
  auto before = service.Pull(four);
  ASSERT_TRUE(before.ok()) << before.status().ToString();

  const Status pull = service.Pull(five).status();
  ExpectRefusedFor(pull, "keys_per_message", 4);
  EXPECT_NE(pull.message().find("pull of 5 keys of table 'item'"), std::string::npos);
  const Status push = service.Push(five, Grads(5));
  ExpectRefusedFor(push, "keys_per_message", 4);
  EXPECT_EQ(service.Hits(Limit::kKeysPerMessage), 2u);

  // Nothing changed, and requests within the limit are served.
  auto after = service.Pull(four);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(*after, *before);
  EXPECT_EQ(service.Stats().keys_pushed, 0u);
  EXPECT_TRUE(service.Push(four, Grads(4)).ok());
  EXPECT_EQ(service.Stats().keys_pushed, 4u);
}

TEST(ShardLimitsTest, ARegistrationWithTooManyTablesIsRefused) {
  ShardPolicy policy;
  policy.limits.tables_per_server = 2;
  auto refused = MakeService(policy, {Spec("a"), Spec("b"), Spec("c")});
  ExpectRefusedFor(refused.status(), "tables_per_server", 2);
  EXPECT_NE(refused.status().message().find("3 tables"), std::string::npos);
  EXPECT_TRUE(MakeService(policy, {Spec("a"), Spec("b")}).ok());
}

TEST(ShardLimitsTest, DeferredPushesBeyondTheLimitAreRefusedAndNotHeld) {
  ShardPolicy policy;
  policy.limits.deferred_pushes_per_clock = 2;
  LimitedService service(policy);
  const std::vector<uint64_t> key = {7};
  auto before = service.Pull(key);
  ASSERT_TRUE(before.ok());
  const wire::PushSender sender{0xD1, 1};
  // Each push is 1.0 on key 7: two are held; the third is refused and forms no ledger record.
  ASSERT_TRUE(service.Push(key, Grads(1), {sender.id, 1}, true, 1).ok());
  ASSERT_TRUE(service.Push(key, Grads(1), {sender.id, 1}, true, 1).ok());
  const Status third = service.Push(key, Grads(1), {sender.id, 1}, true, 1);
  ExpectRefusedFor(third, "deferred_pushes_per_clock", 2);
  EXPECT_EQ(service.Hits(Limit::kDeferredPushesPerClock), 1u);

  // The clock applies the two held pushes only (sgd, learning rate 1: the row drops by 2).
  ASSERT_TRUE(service.ApplyClock(1).ok());
  auto after = service.Pull(key);
  ASSERT_TRUE(after.ok());
  for (uint32_t d = 0; d < kDim; ++d) EXPECT_FLOAT_EQ((*after)[d], (*before)[d] - 2.0f);
  // With the clock applied, the next clock's pushes are held again.
  EXPECT_TRUE(service.Push(key, Grads(1), {sender.id, 1}, true, 2).ok());
}

TEST(ShardLimitsTest, APushFromANewSenderIsRefusedWhileTheLedgerIsFullOfActiveSenders) {
  ShardPolicy policy;
  policy.limits.push_ledger_senders = 2;
  LimitedService service(policy);
  const std::vector<uint64_t> key = {11};
  ASSERT_TRUE(service.Push(key, Grads(1), {0xA, 1}).ok());
  ASSERT_TRUE(service.Push(key, Grads(1), {0xB, 1}).ok());
  auto before = service.Pull(key);
  ASSERT_TRUE(before.ok());

  const Status refused = service.Push(key, Grads(1), {0xC, 1});
  ExpectRefusedFor(refused, "push_ledger_senders", 2);
  EXPECT_EQ(service.Hits(Limit::kPushLedgerSenders), 1u);
  auto after = service.Pull(key);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, *before);

  // The known senders keep pushing, exactly once per request id.
  ASSERT_TRUE(service.Push(key, Grads(1), {0xA, 1}).ok());
  EXPECT_EQ(service.Stats().keys_pushed, 3u);
}

TEST(ShardLimitsTest, NonFiniteGradientsAreRefusedByDefaultAndCounted) {
  LimitedService service(ShardPolicy{});
  const std::vector<uint64_t> keys = {1, 2, 3};
  auto before = service.Pull(keys);
  ASSERT_TRUE(before.ok());
  std::vector<float> grads = Grads(3);
  grads[2 * kDim + 1] = std::numeric_limits<float>::quiet_NaN();
  const Status refused = service.Push(keys, grads);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("table 'item'"), std::string::npos) << refused.ToString();
  EXPECT_NE(refused.message().find("key 3"), std::string::npos) << refused.ToString();
  auto after = service.Pull(keys);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, *before);
  ASSERT_EQ(service.Stats().tables.size(), 1u);
  EXPECT_EQ(service.Stats().tables[0].non_finite_refused, 1u);
  EXPECT_EQ(service.Stats().tables[0].non_finite_skipped, 0u);
  EXPECT_TRUE(service.Push(keys, Grads(3)).ok());
}

TEST(ShardLimitsTest, NonFiniteRowsAreLeftOutWithTheSkipPolicyAndCounted) {
  ShardPolicy policy;
  policy.non_finite = NonFinitePolicy::kSkip;
  LimitedService service(policy);
  const std::vector<uint64_t> keys = {1, 2, 3};
  auto before = service.Pull(keys);
  ASSERT_TRUE(before.ok());
  std::vector<float> grads = Grads(3);
  grads[0] = std::numeric_limits<float>::infinity();               // key 1
  grads[2 * kDim] = -std::numeric_limits<float>::infinity();       // key 3
  ASSERT_TRUE(service.Push(keys, grads).ok());
  auto after = service.Pull(keys);
  ASSERT_TRUE(after.ok());
  for (uint32_t d = 0; d < kDim; ++d) {
    EXPECT_EQ((*after)[d], (*before)[d]);                          // key 1 unchanged
    EXPECT_FLOAT_EQ((*after)[kDim + d], (*before)[kDim + d] - 1.0f);  // key 2 applied
    EXPECT_EQ((*after)[2 * kDim + d], (*before)[2 * kDim + d]);    // key 3 unchanged
    EXPECT_TRUE(std::isfinite((*after)[kDim + d]));
  }
  const wire::ServerStats stats = service.Stats();
  EXPECT_EQ(stats.tables[0].non_finite_skipped, 2u);
  EXPECT_EQ(stats.tables[0].non_finite_refused, 0u);
  EXPECT_EQ(stats.keys_pushed, 1u);
}

TEST(ShardLimitsTest, NonFinitePolicyNamesAreParsed) {
  EXPECT_EQ(*ParseNonFinitePolicy("refuse"), NonFinitePolicy::kRefuse);
  EXPECT_EQ(*ParseNonFinitePolicy("skip"), NonFinitePolicy::kSkip);
  const Status bad = ParseNonFinitePolicy("ignore").status();
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("'ignore'"), std::string::npos) << bad.ToString();
}

TEST(ShardLimitsTest, AClientWhoseMessagesExceedTheServersLimitIsRefusedAtConnect) {
  ClientOptions options;
  options.scheduler_endpoint = "tcp://127.0.0.1:1";  // never reached
  options.limits.keys_per_message = 100;
  options.max_keys_per_message = 101;
  auto client = Client::Connect(options);
  ExpectRefusedFor(client.status(), "keys_per_message", 100);
  EXPECT_NE(client.status().message().find("max_keys_per_message 101"), std::string::npos);
}

TEST(ShardLimitsTest, AClusterPassesItsLimitsToServersAndClients) {
  ShardPolicy policy;
  policy.limits.keys_per_message = 8;
  local::LocalCluster cluster({Spec()}, {.num_servers = 1, .policy = policy});
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  auto client = cluster.Connect("limited");
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  // The client splits a batch into messages the server accepts.
  const std::vector<uint64_t> keys = Keys(20);
  std::vector<float> rows(keys.size() * kDim);
  ASSERT_TRUE((*client)->Pull("item", keys, rows).Wait().ok());

  // A peer that sends more in one message is refused; the server's stats say so.
  Context context;
  RpcChannel channel(context, cluster.server(0).endpoint());
  auto reply = channel.Call(1, wire::EncodePull({1, 1}, "item", keys), Millis(10'000));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ExpectRefusedFor(reply->status, "keys_per_message", 8);
  auto stats = GetServerStats(ServerInfo{0, cluster.server(0).endpoint(), ""}, {}, Millis(10'000));
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(HitsOf(stats->limits_hit, Limit::kKeysPerMessage), 1u);
  EXPECT_TRUE((*client)->Pull("item", keys, rows).Wait().ok());
}

}  // namespace
}  // namespace ember::ps
