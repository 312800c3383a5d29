// The config's `metrics:` section (local/metrics_config.h): read with the rest of the job config,
// off by default, and a bad entry refused naming its key.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "local/cluster_config.h"
#include "tests/test_util.h"

namespace ember {
namespace {

const std::string kConfigs = std::string(EMBER_SOURCE_DIR) + "/configs";

// tt-bench.yaml with `section` appended.
Result<local::ClusterConfig> LoadWithSection(const std::string& section) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/job.yaml";
  std::ofstream(path) << testing::ReadFile(kConfigs + "/tt-bench.yaml") << "\n" << section;
  return local::LoadClusterConfig(path, kConfigs);
}

TEST(MetricsConfigTest, OffByDefault) {
  auto config = LoadWithSection("");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_FALSE(config->metrics.scheduler);
  EXPECT_FALSE(config->metrics.servers);
  EXPECT_FALSE(config->metrics.trainers);
}

TEST(MetricsConfigTest, EachRoleGetsItsAddress) {
  auto config = LoadWithSection(
      "metrics:\n  scheduler: 0.0.0.0:9400\n  servers: 127.0.0.1:9401\n  trainers: localhost:0\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_TRUE(config->metrics.scheduler);
  EXPECT_EQ(config->metrics.scheduler->ToString(), "0.0.0.0:9400");
  ASSERT_TRUE(config->metrics.servers);
  EXPECT_EQ(config->metrics.servers->port, 9401u);
  ASSERT_TRUE(config->metrics.trainers);
  EXPECT_EQ(config->metrics.trainers->ToString(), "127.0.0.1:0");
}

TEST(MetricsConfigTest, BadEntriesAreRefusedNamingTheKey) {
  auto bad_port = LoadWithSection("metrics:\n  servers: 127.0.0.1:http\n");
  ASSERT_FALSE(bad_port.ok());
  EXPECT_EQ(bad_port.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_port.status().ToString().find("metrics.servers"), std::string::npos)
      << bad_port.status().ToString();
  auto unknown = LoadWithSection("metrics:\n  server: 127.0.0.1:9401\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().ToString().find("server"), std::string::npos)
      << unknown.status().ToString();
  auto no_port = LoadWithSection("metrics:\n  scheduler: 127.0.0.1\n");
  ASSERT_FALSE(no_port.ok());
  EXPECT_NE(no_port.status().ToString().find("metrics.scheduler"), std::string::npos)
      << no_port.status().ToString();
}

}  // namespace
}  // namespace ember
