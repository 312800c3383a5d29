// Malformed job configs (a complex key, nodes of the wrong type) each end in InvalidArgument that
// names the file, never in an escaped yaml-cpp exception.
#include <gtest/gtest.h>

#include <fstream>

#include "local/cluster_config.h"
#include "tests/test_util.h"

namespace ember {
namespace {

Status LoadText(const std::string& text, std::string* path) {
  static testing::TempDir dir;
  static int counter = 0;
  *path = dir.path() + "/config" + std::to_string(counter++) + ".yaml";
  std::ofstream(*path) << text;
  return local::LoadClusterConfig(*path).status();
}

void ExpectRefused(const std::string& text, const std::string& mentions = "") {
  std::string path;
  Status status = LoadText(text, &path);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << text << "\n" << status.ToString();
  EXPECT_NE(status.message().find(path), std::string::npos) << status.ToString();
  if (!mentions.empty()) {
    EXPECT_NE(status.message().find(mentions), std::string::npos) << status.ToString();
  }
}

constexpr const char* kTables = "tables:\n  - {name: t, dim: 4}\n";

TEST(MalformedConfigTest, AConfigWithoutTrainServesButCannotTrain) {
  std::string path;
  ASSERT_TRUE(LoadText(kTables, &path).ok());
  auto serving = local::LoadClusterConfig(path);
  ASSERT_TRUE(serving.ok()) << serving.status().ToString();
  EXPECT_FALSE(serving->has_train);
  const Status refused = local::RequireTraining(*serving);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find(path + ": train: missing"), std::string::npos)
      << refused.ToString();
  ASSERT_TRUE(LoadText(std::string(kTables) + "train: {user_tables: [t], item_tables: [t]}\n",
                       &path).ok());
  auto training = local::LoadClusterConfig(path);
  ASSERT_TRUE(training.ok()) << training.status().ToString();
  EXPECT_TRUE(training->has_train);
  EXPECT_TRUE(local::RequireTraining(*training).ok());
}

TEST(MalformedConfigTest, ABadAdvertisedAddressIsRefusedNamingTheKey) {
  ExpectRefused(std::string(kTables) + "cluster: {server_advertise: \"two words\"}\n",
                "cluster.server_advertise: advertised address 'two words'");
  std::string path;
  EXPECT_TRUE(
      LoadText(std::string(kTables) + "cluster: {server_advertise: \"node7:9000\"}\n", &path).ok());
}

TEST(MalformedConfigTest, ComplexKeyAtTheTopIsRefused) {
  ExpectRefused(std::string("? [a]\n: 1\n") + kTables);
}

TEST(MalformedConfigTest, ComplexKeyInASectionIsRefused) {
  ExpectRefused(std::string("cluster:\n  ? [a]\n  : 1\n") + kTables, "cluster");
  ExpectRefused("tables:\n  - {name: t, dim: 4, ? [a]: 1}\n", "tables[0]");
  ExpectRefused(std::string(kTables) + "train:\n  ? {x: 1}\n  : 2\n", "train");
}

TEST(MalformedConfigTest, ScalarWhereAMappingIsExpectedIsRefused) {
  ExpectRefused(std::string("cluster: 3\n") + kTables, "cluster");
  ExpectRefused(std::string(kTables) + "train: yes\n", "train");
  ExpectRefused(std::string(kTables) + "model: 7\n", "model");
  ExpectRefused(std::string(kTables) + "data: text\n", "data");
  ExpectRefused("tables:\n  - {name: t, dim: 4, optimizer: {kind: [sgd]}}\n", "optimizer");
  ExpectRefused("just a scalar\n");
  ExpectRefused("- a\n- b\n");
}

TEST(MalformedConfigTest, SequenceWhereAScalarIsExpectedIsRefused) {
  ExpectRefused("tables:\n  - {name: [t], dim: 4}\n", "tables[0].name");
  ExpectRefused(std::string("cluster: {servers: [1, 2]}\n") + kTables, "cluster.servers");
  ExpectRefused(std::string(kTables) + "train: {steps: {a: 1}}\n", "train");
}

TEST(MalformedConfigTest, BadValuesAreRefused) {
  ExpectRefused("tables:\n  - {name: t, dim: four}\n", "tables[0].dim");
  ExpectRefused(std::string("cluster: {servers: -1}\n") + kTables, "cluster.servers");
  ExpectRefused("tables: {name: t}\n", "tables");
  ExpectRefused("tables:\n  - {name: t, dim: 4}\n  - 5\n", "tables[1]");
  ExpectRefused("{unclosed: [1, 2\n");
}

}  // namespace
}  // namespace ember
