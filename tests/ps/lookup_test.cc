// Read-only lookups (the serving path), from the wire codec through a server to the client: a
// lookup returns what a pull would, creates no row and changes no state, is refused over the
// keys-per-message limit and for an unknown table, and may be sent by trainers and admins only.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "common/hash.h"
#include "local/local_cluster.h"
#include "ps/client/client.h"
#include "ps/server/shard_service.h"

namespace ember::ps {
namespace {

constexpr uint32_t kDim = 4;

TableSpec Spec(const std::string& name = "item") {
  TableSpec spec;
  spec.name = name;
  spec.dim = kDim;
  spec.seed = HashName(name);
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.optimizer.learning_rate = 0.1f;
  spec.initializer.kind = InitializerKind::kNormal;
  spec.initializer.stddev = 0.1f;
  return spec;
}

std::vector<uint64_t> Keys(uint64_t first, size_t n) {
  std::vector<uint64_t> keys(n);
  std::iota(keys.begin(), keys.end(), first);
  return keys;
}

uint64_t RowsOnServers(Client& client) {
  auto stats = client.Stats();
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  uint64_t rows = 0;
  if (!stats.ok()) return rows;
  for (const auto& server : *stats) {
    for (const auto& table : server.tables) rows += table.rows;
  }
  return rows;
}

// ---- Wire ----

TEST(LookupWireTest, RequestAndReplyRoundTrip) {
  const std::vector<uint64_t> keys = {3, 1, 4, 1, 5};
  const std::vector<uint32_t> positions = {4, 0};
  auto request = wire::DecodeRequest(wire::EncodeLookupSubset({7, 9}, "item", keys, positions,
                                                              RowFormat::kF16, MissingRows::kFlag));
  ASSERT_TRUE(request.ok()) << request.status().ToString();
  EXPECT_EQ(wire::RequestKindName(request->body), "lookup");
  const auto& lookup = std::get<wire::LookupRequest>(request->body);
  EXPECT_EQ(lookup.table, "item");
  EXPECT_EQ(std::vector<uint64_t>(lookup.keys.begin(), lookup.keys.end()),
            (std::vector<uint64_t>{5, 3}));
  EXPECT_EQ(lookup.row_format, RowFormat::kF16);
  EXPECT_EQ(lookup.missing, MissingRows::kFlag);
  EXPECT_EQ(wire::SendersOf(request->body), kTrainers | kReaders);

  auto reply = wire::DecodeResponse(
      wire::EncodeLookupResponse(7, 9, 4, 2, [](std::span<float> rows, std::span<uint8_t> found) {
        std::iota(rows.begin(), rows.end(), 1.0f);
        found[0] = 1;
        found[1] = 0;
        return Status::Ok();
      }));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  const auto& rows = std::get<wire::LookupRows>(reply->body);
  EXPECT_EQ(std::vector<float>(rows.rows.begin(), rows.rows.end()),
            (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(std::vector<uint8_t>(rows.found.begin(), rows.found.end()),
            (std::vector<uint8_t>{1, 0}));
}

// ---- One server, called in process ----

class LookupServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ShardPolicy policy;
    policy.limits.keys_per_message = 8;
    auto service = ShardService::Create(
        0, {Spec()}, MakeBalancedRouting(8, {{0, "tcp://127.0.0.1:1"}}, 1), {}, policy);
    ASSERT_TRUE(service.ok()) << service.status().ToString();
    service_ = std::move(*service);
  }

  wire::DecodedResponse Call(Frame request, const Peer& peer = Peer{}) {
    auto response = wire::DecodeResponse(service_->Handle(std::move(request), peer));
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response.ok() ? std::move(*response) : wire::DecodedResponse{};
  }
  wire::DecodedResponse Lookup(std::string_view table, std::span<const uint64_t> keys,
                               MissingRows missing = MissingRows::kInitial,
                               const Peer& peer = Peer{}) {
    return Call(
        wire::EncodeLookupSubset({++request_id_, 1}, table, keys, {}, RowFormat::kF32, missing),
        peer);
  }

  std::unique_ptr<ShardService> service_;
  uint64_t request_id_ = 0;
};

TEST_F(LookupServiceTest, LookupOverTheKeysPerMessageLimitIsRefusedAndCounted) {
  const std::vector<uint64_t> nine = Keys(1, 9);
  const auto refused = Lookup("item", nine);
  EXPECT_EQ(refused.status.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status.message().find("keys_per_message"), std::string::npos)
      << refused.status.ToString();
  EXPECT_NE(refused.status.message().find("lookup of 9 keys of table 'item'"), std::string::npos)
      << refused.status.ToString();
  EXPECT_EQ(HitsOf(service_->Stats().limits_hit, Limit::kKeysPerMessage), 1u);
  EXPECT_TRUE(Lookup("item", Keys(1, 8)).status.ok());
  EXPECT_EQ(service_->Stats().tables[0].rows, 0u);
}

TEST_F(LookupServiceTest, LookupOfAnUnknownTableIsNotFoundNamingIt) {
  const auto refused = Lookup("nope", Keys(1, 2));
  EXPECT_EQ(refused.status.code(), StatusCode::kNotFound);
  EXPECT_NE(refused.status.message().find("'nope'"), std::string::npos)
      << refused.status.ToString();
}

TEST_F(LookupServiceTest, TrainersAndAdminsMayLookUpServersMayNot) {
  const std::vector<uint64_t> keys = Keys(1, 3);
  EXPECT_TRUE(
      Lookup("item", keys, MissingRows::kInitial, Peer{PeerRole::kTrainer, "t"}).status.ok());
  EXPECT_TRUE(Lookup("item", keys, MissingRows::kInitial, Peer{PeerRole::kAdmin, "a"}).status.ok());
  const auto refused = Lookup("item", keys, MissingRows::kInitial, Peer{PeerRole::kServer, "s"});
  EXPECT_EQ(refused.status.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(refused.status.message().find("'lookup'"), std::string::npos);
}

TEST_F(LookupServiceTest, FlagModeAnswersAFoundFlagPerKeyAndCreatesNothing) {
  const std::vector<uint64_t> stored = {2};
  auto pulled = Call(wire::EncodePull({++request_id_, 1}, "item", stored));
  ASSERT_TRUE(pulled.status.ok());
  const std::vector<uint64_t> keys = {1, 2, 3};
  const auto reply = Lookup("item", keys, MissingRows::kFlag);
  ASSERT_TRUE(reply.status.ok()) << reply.status.ToString();
  const auto& rows = std::get<wire::LookupRows>(reply.body);
  EXPECT_EQ(std::vector<uint8_t>(rows.found.begin(), rows.found.end()),
            (std::vector<uint8_t>{0, 1, 0}));
  const auto& pulled_row = std::get<std::span<const float>>(pulled.body);
  for (uint32_t d = 0; d < kDim; ++d) {
    EXPECT_EQ(rows.rows[d], 0.0f);
    EXPECT_EQ(rows.rows[kDim + d], pulled_row[d]);
  }
  EXPECT_EQ(service_->Stats().tables[0].rows, 1u);
}

// ---- Client against a cluster ----

TEST(LookupClusterTest, LookupOfNeverTouchedKeysCreatesNoRowsAndGivesTheInitialRows) {
  local::LocalCluster cluster({Spec()}, {.num_servers = 2});
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  auto client = cluster.Connect();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const std::vector<uint64_t> keys = Keys(1000, 500);
  std::vector<float> looked_up(keys.size() * kDim);
  ASSERT_TRUE((*client)->Lookup("item", keys, looked_up).Wait().ok());
  EXPECT_EQ(RowsOnServers(**client), 0u);

  std::vector<float> flagged(keys.size() * kDim, 1.0f);
  std::vector<uint8_t> found(keys.size(), 1);
  ASSERT_TRUE((*client)->Lookup("item", keys, flagged, MissingRows::kFlag, found).Wait().ok());
  EXPECT_EQ(found, std::vector<uint8_t>(keys.size(), 0));
  EXPECT_EQ(flagged, std::vector<float>(flagged.size(), 0.0f));
  EXPECT_EQ(RowsOnServers(**client), 0u);

  // A pull on another, fresh cluster (of another size) creates exactly these rows.
  local::LocalCluster other({Spec()}, {.num_servers = 1});
  ASSERT_TRUE(other.status().ok()) << other.status().ToString();
  auto other_client = other.Connect();
  ASSERT_TRUE(other_client.ok()) << other_client.status().ToString();
  std::vector<float> pulled(keys.size() * kDim);
  ASSERT_TRUE((*other_client)->Pull("item", keys, pulled).Wait().ok());
  EXPECT_EQ(looked_up, pulled);
}

// Trains `keys` for `steps` steps from `clock` on with gradients that depend on step and position.
void Train(Client& client, std::span<const uint64_t> keys, uint64_t clock, int steps) {
  std::vector<float> grads(keys.size() * kDim);
  for (int step = 0; step < steps; ++step) {
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.01f * float((i * 5 + step) % 11) - 0.05f;
    ASSERT_TRUE(client.Push("item", keys, grads, clock + step).Wait().ok());
  }
}

TEST(LookupClusterTest, LookupOfTrainedRowsGivesThemAndLeavesRowsAndOptimizerStateUnchanged) {
  local::LocalCluster looked_at({Spec()}, {.num_servers = 2});
  local::LocalCluster untouched({Spec()}, {.num_servers = 2});
  ASSERT_TRUE(looked_at.status().ok() && untouched.status().ok());
  auto a = looked_at.Connect();
  auto b = untouched.Connect();
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<uint64_t> keys = Keys(7, 300);
  Train(**a, keys, 0, 3);
  Train(**b, keys, 0, 3);
  std::vector<float> pulled(keys.size() * kDim);
  ASSERT_TRUE((*a)->Pull("item", keys, pulled).Wait().ok());

  std::vector<uint64_t> asked = keys;
  asked.push_back(1u << 30);  // never touched
  std::vector<float> rows(asked.size() * kDim);
  std::vector<uint8_t> found(asked.size());
  ASSERT_TRUE((*a)->Lookup("item", asked, rows, MissingRows::kFlag, found).Wait().ok());
  EXPECT_EQ(std::vector<float>(rows.begin(), rows.begin() + pulled.size()), pulled);
  EXPECT_EQ(std::count(found.begin(), found.end(), 1), static_cast<long>(keys.size()));
  EXPECT_EQ(found.back(), 0);
  EXPECT_EQ(RowsOnServers(**a), keys.size());

  // The next steps (Adagrad: they read the accumulated state) agree with the cluster nobody
  // looked at.
  Train(**a, keys, 3, 2);
  Train(**b, keys, 3, 2);
  std::vector<float> after_a(keys.size() * kDim), after_b(keys.size() * kDim);
  ASSERT_TRUE((*a)->Pull("item", keys, after_a).Wait().ok());
  ASSERT_TRUE((*b)->Pull("item", keys, after_b).Wait().ok());
  EXPECT_EQ(after_a, after_b);
}

TEST(LookupClusterTest, ClientRefusesAnUnknownTableAndMismatchedFlags) {
  local::LocalCluster cluster({Spec()}, {.num_servers = 1});
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  auto client = cluster.Connect();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const std::vector<uint64_t> keys = {1, 2};
  std::vector<float> rows(keys.size() * kDim);
  const Status unknown = (*client)->Lookup("users", keys, rows).Wait();
  EXPECT_EQ(unknown.code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.message().find("'users'"), std::string::npos) << unknown.ToString();
  std::vector<uint8_t> found(1);
  EXPECT_EQ((*client)->Lookup("item", keys, rows, MissingRows::kFlag, found).Wait().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*client)->Lookup("item", keys, rows, MissingRows::kInitial, found).Wait().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ember::ps
