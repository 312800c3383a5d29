// A pull of several tables at once (Client::Pull of TablePulls): the same rows at the same places
// as one pull per table, one request per server for all of them, split by max_keys_per_message
// like any pull, and clear errors for what cannot be pulled.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "common/hash.h"
#include "local/local_cluster.h"

namespace ember {
namespace {

TableSpec MakeTable(const std::string& name, uint32_t dim) {
  TableSpec spec;
  spec.name = name;
  spec.dim = dim;
  spec.seed = HashName(name);
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.optimizer.learning_rate = 0.1f;
  spec.initializer.stddev = 0.1f;
  return spec;
}

class MultiTablePullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.status().ok()) << cluster_.status().ToString();
    users_.resize(700);
    std::iota(users_.begin(), users_.end(), 5);
    items_.resize(300);
    std::iota(items_.begin(), items_.end(), 1'000'000);
    items_.push_back(~uint64_t{0});
  }

  // Each server's pull requests so far.
  std::vector<uint64_t> PullRequests(ps::Client& client) {
    std::vector<uint64_t> counts;
    auto stats = client.Stats();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    if (stats.ok()) {
      for (const ServerStats& server : *stats) counts.push_back(server.pull_requests);
    }
    return counts;
  }

  local::LocalCluster cluster_{{MakeTable("users", 8), MakeTable("items", 3)}, {.num_servers = 3}};
  std::vector<uint64_t> users_;
  std::vector<uint64_t> items_;
};

TEST_F(MultiTablePullTest, RowsEqualOnePullPerTableWithOneRequestPerServer) {
  auto client = cluster_.Connect();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  // Rows that moved from their initial values first, so that a row in the wrong place shows.
  std::vector<float> grads(users_.size() * 8, 0.5f);
  ASSERT_TRUE((*client)->Push("users", users_, grads).Wait().ok());
  std::vector<float> users(users_.size() * 8), items(items_.size() * 3);
  std::vector<float> again(users_.size() * 8);
  const std::vector<uint64_t> none;
  const std::vector<uint64_t> before = PullRequests(**client);
  const ps::TablePull pulls[] = {{"users", users_, users},
                                 {"items", items_, items},
                                 {"items", none, {}},
                                 {"users", users_, again}};
  ASSERT_TRUE((*client)->Pull(pulls).Wait().ok());
  const std::vector<uint64_t> after = PullRequests(**client);
  ASSERT_EQ(after.size(), 3u);
  for (size_t s = 0; s < after.size(); ++s) EXPECT_EQ(after[s] - before[s], 1u) << "server " << s;

  std::vector<float> alone_users(users.size()), alone_items(items.size());
  ASSERT_TRUE((*client)->Pull("users", users_, alone_users).Wait().ok());
  ASSERT_TRUE((*client)->Pull("items", items_, alone_items).Wait().ok());
  EXPECT_EQ(users, alone_users);
  EXPECT_EQ(again, alone_users);
  EXPECT_EQ(items, alone_items);
}

TEST_F(MultiTablePullTest, SmallMessagesStillPlaceEveryRow) {
  ps::ClientOptions options;
  options.max_keys_per_message = 37;  // sub-requests that straddle the tables' boundary
  auto client = cluster_.Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::vector<float> users(users_.size() * 8), items(items_.size() * 3);
  const ps::TablePull pulls[] = {{"items", items_, items}, {"users", users_, users}};
  ASSERT_TRUE((*client)->Pull(pulls).Wait().ok());
  std::vector<float> alone_users(users.size()), alone_items(items.size());
  ASSERT_TRUE((*client)->Pull("users", users_, alone_users).Wait().ok());
  ASSERT_TRUE((*client)->Pull("items", items_, alone_items).Wait().ok());
  EXPECT_EQ(users, alone_users);
  EXPECT_EQ(items, alone_items);
}

TEST_F(MultiTablePullTest, WhatCannotBePulledIsRefusedNamingIt) {
  auto client = cluster_.Connect();
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::vector<float> users(users_.size() * 8), items(items_.size() * 3);
  const ps::TablePull unknown[] = {{"users", users_, users}, {"itemz", items_, items}};
  Status status = (*client)->Pull(unknown).Wait();
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_NE(status.message().find("itemz"), std::string::npos) << status.ToString();

  std::vector<float> short_items(items.size() - 1);
  const ps::TablePull wrong_size[] = {{"users", users_, users}, {"items", items_, short_items}};
  status = (*client)->Pull(wrong_size).Wait();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("'items'"), std::string::npos) << status.ToString();

  EXPECT_EQ((*client)->Pull(std::span<const ps::TablePull>()).Wait().code(),
            StatusCode::kInvalidArgument);
  const std::vector<ps::TablePull> too_many(wire::kMaxTablesPerPull + 1, {"users", {}, {}});
  status = (*client)->Pull(too_many).Wait();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("65 tables"), std::string::npos) << status.ToString();
}

}  // namespace
}  // namespace ember
