// Config overrides, switches and logging flags on the `ember` command line, end to end: `ember
// cluster` passes --set, --log-level and --log-format on to every process it starts, and bad
// values are usage errors naming them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
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

  // Runs `ember <args...>` (or the program an absolute args[0] names) to its exit (60 s at most)
  // and returns the exit code.
  int Run(std::vector<std::string> args) {
    if (args.front().front() != '/') args.insert(args.begin(), EMBER_BINARY);
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
  // Every command takes the logging flags; a value name keeps its own bracketed ':'.
  EXPECT_NE(Log().find("--log-format FORMAT"), std::string::npos) << Log();
  EXPECT_NE(Log().find("--advertise HOST[:PORT]"), std::string::npos) << Log();
}

TEST_F(ConfigFlagsProcessTest, JsonLogsOfEveryProcessGoToStderrOneObjectALine) {
  const std::string json_log = dir_.path() + "/log.jsonl";
  ASSERT_EQ(Run({"/bin/sh", "-c",
                 std::string("exec \"$0\" cluster --config \"$1\" --log-format json 2>\"$2\""),
                 EMBER_BINARY, config_, json_log}),
            0)
      << Log() << testing::ReadFile(json_log);
  std::istringstream lines(testing::ReadFile(json_log));
  std::set<std::string> roles;
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json entry = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_TRUE(entry.is_object()) << "not a JSON object: " << line;
    for (const char* field : {"time", "role", "pid", "level", "message"}) {
      EXPECT_TRUE(entry.contains(field)) << field << " missing: " << line;
    }
    roles.insert(entry.value("role", ""));
  }
  for (const char* role : {"cluster", "scheduler", "server"}) EXPECT_EQ(roles.count(role), 1u);
  // stdout keeps the progress lines and the summary, and no log line.
  EXPECT_NE(Log().find("summary"), std::string::npos) << Log();
  EXPECT_EQ(Log().find("listening on"), std::string::npos) << Log();
}

TEST_F(ConfigFlagsProcessTest, AFailingCommandReportsItsErrorAsJsonWhenLogsAreJson) {
  // tune refuses synthetic data after its logging is set up; --log-level off hides no error.
  const std::string json_log = dir_.path() + "/error.jsonl";
  ASSERT_EQ(Run({"/bin/sh", "-c",
                 std::string("exec \"$0\" tune --config \"$1\" --grid model.temperature=0.1 "
                             "--log-format json --log-level off 2>\"$2\""),
                 EMBER_BINARY, config_, json_log}),
            2)
      << Log();
  const std::string text = testing::ReadFile(json_log);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "not one line: " << text;
  const nlohmann::json entry = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(entry.is_object()) << "not a JSON object: " << text;
  EXPECT_EQ(entry.value("level", ""), "error") << text;
  EXPECT_EQ(entry.value("role", ""), "tune") << text;
  EXPECT_EQ(entry.value("message", "").rfind("ember tune: INVALID_ARGUMENT: data.kind", 0), 0u)
      << text;
  // In text, the same error is a plain line.
  ASSERT_EQ(Run({"tune", "--config", config_, "--grid", "model.temperature=0.1"}), 2);
  EXPECT_NE(Log().find("ember tune: INVALID_ARGUMENT: data.kind"), std::string::npos) << Log();
}

TEST_F(ConfigFlagsProcessTest, LogLevelFlagWinsOverTheEnvironmentForEveryProcess) {
  testing::ScopedVariable debug("EMBER_LOG_LEVEL", "debug");
  ASSERT_EQ(Run({"cluster", "--config", config_, "--log-level", "warn"}), 0) << Log();
  EXPECT_NE(Log().find("summary"), std::string::npos) << Log();
  for (const char* info : {" info ", " debug ", "listening on", "serving on"}) {
    EXPECT_EQ(Log().find(info), std::string::npos) << info << " in " << Log();
  }
}

TEST_F(ConfigFlagsProcessTest, BadLoggingValuesAreNamed) {
  EXPECT_EQ(Run({"status", "--scheduler", "tcp://127.0.0.1:1", "--log-level", "loud"}), 2);
  EXPECT_NE(Log().find("--log-level: loud not in"), std::string::npos) << Log();
  EXPECT_EQ(Run({"train", "--config", config_, "--log-format", "xml"}), 2);
  EXPECT_NE(Log().find("--log-format: xml not in"), std::string::npos) << Log();
  // A bad variable is a warning naming it; the default applies.
  testing::ScopedVariable xml("EMBER_LOG_FORMAT", "xml");
  ASSERT_EQ(Run({"cluster", "--config", config_}), 0) << Log();
  EXPECT_NE(Log().find("ignoring EMBER_LOG_FORMAT='xml' (not one of text, json); using text"),
            std::string::npos)
      << Log();
  EXPECT_NE(Log().find(" scheduler info scheduler: listening on"), std::string::npos) << Log();
}

}  // namespace
}  // namespace ember
