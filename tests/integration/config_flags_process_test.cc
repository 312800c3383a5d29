// Config overrides and switches on the `ember` command line, end to end: `ember cluster` passes
// --set on to every process it starts, and bad overrides are usage errors naming them.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/child_process.h"
#include "tests/test_util.h"

namespace ember {
namespace {

using std::chrono::seconds;

// A two-tower job small enough to train in a second on two servers.
constexpr const char* kJob = R"(
cluster: {servers: 2, server_threads: 1, partitions: 48}
tables:
  - {name: user, dim: 8, optimizer: {kind: sgd, learning_rate: 0.1}}
  - {name: item, dim: 8, optimizer: {kind: sgd, learning_rate: 0.1}}
model: {embedding_dim: 8, user_slots: 1, item_slots: 1, hidden: [16], output_dim: 8}
data:
  kind: synthetic
  synthetic: {user_slots: 1, item_slots: 1, vocabulary: 2000, seed: 5}
train: {steps: 20, batch_size: 64, backend: cpu, log_every: 10, user_tables: [user],
        item_tables: [item]}
)";

class ConfigFlagsProcessTest : public ::testing::Test {
 protected:
  ConfigFlagsProcessTest() { std::ofstream(config_) << kJob; }

  // Runs `ember <args...>` to its exit (60 s at most) and returns the exit code.
  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), EMBER_BINARY);
    ChildProcess process(args, log_);
    return process.WaitExit(seconds(60));
  }
  std::string Log() const { return testing::ReadFile(log_); }

  testing::TempDir dir_;
  const std::string config_ = dir_.path() + "/job.yaml";
  const std::string log_ = dir_.path() + "/out.log";
};

TEST_F(ConfigFlagsProcessTest, ClusterPassesSetOnToEveryProcess) {
  const std::string summary = dir_.path() + "/summary.json";
  ASSERT_EQ(Run({"cluster", "--config", config_, "--set", "cluster.servers=3", "--set",
                 "train.steps=12", "--summary-json", summary}),
            0)
      << Log();
  // The scheduler waited for three servers, and the trainer ran the overridden steps.
  EXPECT_NE(Log().find("3 servers, 48 partitions"), std::string::npos) << Log();
  const nlohmann::json json = nlohmann::json::parse(testing::ReadFile(summary));
  EXPECT_EQ(json["steps"], 12);
  ASSERT_EQ(json["servers"].size(), 3u) << json.dump();
  for (const auto& server : json["servers"]) EXPECT_GT(server["rows"], 0) << json.dump();
}

TEST_F(ConfigFlagsProcessTest, BadOverridesAreUsageErrorsNamingThem) {
  EXPECT_EQ(Run({"cluster", "--config", config_, "--set", "cluster.sevrers=3"}), 2);
  EXPECT_NE(Log().find("overriding cluster.sevrers=3: cluster.sevrers: unknown field"),
            std::string::npos)
      << Log();
  EXPECT_EQ(Run({"train", "--config", config_, "--set", "train.steps"}), 2);
  EXPECT_NE(Log().find("--set: override 'train.steps': expected KEY=VALUE"), std::string::npos)
      << Log();
  EXPECT_EQ(Run({"scheduler", "--config", config_, "--set", "train.batch_size=lots"}), 2);
  EXPECT_NE(Log().find("overriding train.batch_size=lots"), std::string::npos) << Log();
  EXPECT_EQ(Run({"server", "--set", "cluster.servers=3"}), 2);
  EXPECT_NE(Log().find("--set requires --config"), std::string::npos) << Log();
}

// The last of --pipeline / --no-pipeline wins. A trainer without --scheduler stops once its
// config has loaded, so the two outcomes tell the configs apart: pipelining under bsp is a config
// error, and without it the missing scheduler is.
TEST_F(ConfigFlagsProcessTest, TheLastOfASwitchAndItsNegationWins) {
  EXPECT_EQ(Run({"train", "--config", config_, "--mode", "bsp", "--no-pipeline", "--pipeline"}), 2);
  EXPECT_NE(Log().find("train.pipeline: needs mode asp"), std::string::npos) << Log();
  EXPECT_EQ(Log().find("--scheduler is required"), std::string::npos) << Log();
  EXPECT_EQ(Run({"train", "--config", config_, "--mode", "bsp", "--pipeline", "--no-pipeline"}), 2);
  EXPECT_NE(Log().find("--scheduler is required"), std::string::npos) << Log();
}

TEST_F(ConfigFlagsProcessTest, HelpListsSwitchesAndOverridesButNotInternalFlags) {
  EXPECT_EQ(Run({"train", "--help"}), 0);
  EXPECT_NE(Log().find("--[no-]pipeline"), std::string::npos) << Log();
  EXPECT_NE(Log().find("--set KEY=VALUE"), std::string::npos) << Log();
  // Flags only `ember cluster` and `ember bench-tier` pass to the processes they start.
  EXPECT_EQ(Run({"scheduler", "--help"}), 0);
  EXPECT_EQ(Run({"bench-tier", "--help"}), 0);
  EXPECT_EQ(Log().find("--endpoint-file"), std::string::npos) << Log();
  EXPECT_EQ(Log().find("--push-until-killed"), std::string::npos) << Log();
}

}  // namespace
}  // namespace ember
