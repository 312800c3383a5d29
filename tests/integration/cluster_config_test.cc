// The job config loader with overrides: an override changes what every role loads, and a bad one
// is reported naming it; the `limits:` section and cluster.non_finite_gradients among them.
#include "local/cluster_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.h"

namespace ember {
namespace {

const std::string kTtBench = std::string(EMBER_SOURCE_DIR) + "/configs/tt-bench.yaml";

// The config at `path` loaded with the overrides `texts`.
Result<local::ClusterConfig> LoadWith(const std::vector<std::string>& texts,
                                      const std::string& path = kTtBench) {
  std::vector<config::Override> overrides;
  for (const std::string& text : texts) {
    ASSIGN_OR_RETURN(config::Override parsed, config::ParseOverride(text));
    overrides.push_back(parsed);
  }
  return local::LoadClusterConfig(path, "", overrides);
}

TEST(ClusterConfigTest, OverridesChangeTheLoadedValues) {
  auto plain = local::LoadClusterConfig(kTtBench);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->cluster.servers, 2u);

  auto config = LoadWith({"cluster.servers=3", "cluster.trainers=2", "train.mode=bsp",
                          "tables.item_id.dim=32", "model.hidden=[64, 32]",
                          "cluster.checkpoint_dir=\"ckpt dir\"", "cluster.checkpoint_every=5"});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->cluster.servers, 3u);
  // Derived values follow: the trainer count reaches the sync options and the dense table.
  EXPECT_EQ(config->train.sync.trainers, 2u);
  EXPECT_EQ(config->train.sync.mode, SyncMode::kBsp);
  EXPECT_EQ(config->model.hidden, (std::vector<uint32_t>{64, 32}));
  EXPECT_EQ(config->cluster.checkpoint_dir, "ckpt dir");
  EXPECT_EQ(config->cluster.checkpoint_every, 5u);
  bool found = false;
  for (const TableSpec& table : config->tables) {
    if (table.name == "item_id") {
      found = true;
      EXPECT_EQ(table.dim, 32u);
    } else if (table.name == "user_id") {
      EXPECT_EQ(table.dim, 64u);
    }
  }
  EXPECT_TRUE(found);
}

TEST(ClusterConfigTest, AMisspeltKeyIsRejectedNamingTheOverride) {
  for (const char* text : {"cluster.sevrers=3", "clustr.servers=3"}) {
    auto config = LoadWith({text});
    ASSERT_FALSE(config.ok()) << text;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    const std::string message(config.status().message());
    EXPECT_NE(message.find(std::string("overriding ") + text), std::string::npos) << message;
    EXPECT_NE(message.find("unknown field"), std::string::npos) << message;
  }
}

TEST(ClusterConfigTest, ABadValueIsRejectedNamingTheOverride) {
  auto config = LoadWith({"cluster.servers=many"});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find(
                "overriding cluster.servers=many: cluster.servers: cannot read 'many'"),
            std::string_view::npos)
      << config.status().ToString();
  auto invalid = LoadWith({"train.backend=tpu"});
  ASSERT_FALSE(invalid.ok());
  EXPECT_NE(invalid.status().message().find("overriding train.backend=tpu"), std::string_view::npos)
      << invalid.status().ToString();
}

TEST(ClusterConfigTest, AnOverrideTheTreeCannotTakeIsRejected) {
  auto config = LoadWith({"train.steps.fast=1"});
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("override train.steps.fast=1"), std::string_view::npos)
      << config.status().ToString();
}

TEST(ClusterConfigTest, EarlyStoppingNeedsAValidationSplitAndOneTrainer) {
  const std::string movielens = std::string(EMBER_SOURCE_DIR) + "/configs/movielens-100k.yaml";
  auto load = [&](const std::vector<std::string>& texts) {
    std::vector<config::Override> overrides;
    for (const std::string& text : texts) overrides.push_back(*config::ParseOverride(text));
    return local::LoadClusterConfig(movielens, "", overrides);
  };
  const std::string every = "train.early_stopping.every_epochs=1";
  auto ok = load({every, "data.interactions.validation=true"});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->train.early_stopping.every_epochs, 1u);
  for (const auto& [texts, message] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{every}, "needs data.interactions.validation: true"},
           {{every, "data.interactions.validation=true", "cluster.trainers=2"},
            "needs a run of one trainer (cluster.trainers is 2)"},
           {{every, "data.interactions.validation=true", "train.epochs=0"},
            "every_epochs: needs train.epochs"}}) {
    auto refused = load(texts);
    ASSERT_FALSE(refused.ok()) << texts.back();
    EXPECT_NE(refused.status().message().find(message), std::string_view::npos)
        << refused.status().ToString();
  }
  auto synthetic = LoadWith({"train.early_stopping.every_steps=10"});
  ASSERT_FALSE(synthetic.ok());
  EXPECT_NE(synthetic.status().message().find("needs data.interactions.validation"),
            std::string_view::npos);
}

TEST(LimitsConfigTest, DefaultsWithoutALimitsSection) {
  auto config = LoadWith({});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->limits.keys_per_message, Limits{}.keys_per_message);
  EXPECT_EQ(config->limits.socket_queue, Limits{}.socket_queue);
  EXPECT_EQ(config->cluster.non_finite_gradients, "refuse");
}

TEST(LimitsConfigTest, OverridesSetLimitsAndThePolicy) {
  auto config = LoadWith({"limits.keys_per_message=512", "limits.waiters=7",
                          "limits.push_ledger_idle_seconds=90", "limits.socket_queue=50",
                          "cluster.non_finite_gradients=skip"});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->limits.keys_per_message, 512u);
  EXPECT_EQ(config->limits.waiters, 7u);
  EXPECT_EQ(config->limits.push_ledger_idle_seconds, 90u);
  EXPECT_EQ(config->limits.socket_queue, 50u);
  EXPECT_EQ(config->limits.trainers, Limits{}.trainers);
  EXPECT_EQ(config->cluster.non_finite_gradients, "skip");
}

TEST(LimitsConfigTest, BadLimitsAreNamed) {
  struct Case {
    std::string override_text;
    std::string expected;
  } cases[] = {
      {"limits.keys_per_mesage=5", "keys_per_mesage"},
      {"limits.waiters=0", "limits.waiters: must be at least 1"},
      {"limits.trainers=-3", "limits.trainers"},
      {"cluster.non_finite_gradients=ignore", "cluster.non_finite_gradients"},
  };
  for (const Case& c : cases) {
    auto config = LoadWith({c.override_text});
    ASSERT_FALSE(config.ok()) << c.override_text;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument) << c.override_text;
    EXPECT_NE(config.status().message().find(c.expected), std::string::npos)
        << c.override_text << ": " << config.status().ToString();
  }
}

// tt-bench with `lines` added to its cluster section, loaded.
Result<local::ClusterConfig> LoadWithCluster(const std::string& lines,
                                             const std::vector<std::string>& overrides = {}) {
  std::ifstream in(kTtBench);
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  const size_t cluster = yaml.find("\ncluster:\n");
  EXPECT_NE(cluster, std::string::npos);
  yaml.insert(cluster + 10, lines);
  testing::TempDir dir;
  const std::string path = dir.path() + "/job.yaml";
  std::ofstream(path) << yaml;
  return LoadWith(overrides, path);
}

TEST(ClusterConfigTest, CheckpointEveryTakesAStepCountOrAnIncrementalSchedule) {
  auto incremental = LoadWithCluster(
      "  checkpoint_dir: ckpt\n"
      "  checkpoint_every: {steps: 50, incremental: true, base_every: 8}\n");
  ASSERT_TRUE(incremental.ok()) << incremental.status().ToString();
  EXPECT_EQ(incremental->cluster.checkpoint_every, 50u);
  EXPECT_EQ(incremental->cluster.checkpoint_base_every, 8u);

  // Its keys take overrides one by one.
  auto overridden = LoadWithCluster(
      "  checkpoint_dir: ckpt\n  checkpoint_every: {steps: 50, incremental: true}\n",
      {"cluster.checkpoint_every.steps=20"});
  ASSERT_TRUE(overridden.ok()) << overridden.status().ToString();
  EXPECT_EQ(overridden->cluster.checkpoint_every, 20u);
  EXPECT_EQ(overridden->cluster.checkpoint_base_every, 10u);  // the default

  auto full = LoadWithCluster("  checkpoint_dir: ckpt\n  checkpoint_every: {steps: 50}\n");
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->cluster.checkpoint_base_every, 0u);

  for (const auto& [text, error] : std::vector<std::pair<std::string, std::string>>{
           {"{steps: 50, base_every: 4}", "base_every: needs incremental: true"},
           {"{steps: 50, incremental: true, base_every: 0}", "base_every: must be >= 1"},
           {"{incremental: true}", "cluster.checkpoint_every.steps: required"},
           {"{steps: 5, every: 2}", "every"},
           {"often", "cannot read 'often'"}}) {
    auto refused =
        LoadWithCluster("  checkpoint_dir: ckpt\n  checkpoint_every: " + text + "\n");
    ASSERT_FALSE(refused.ok()) << text;
    EXPECT_NE(refused.status().ToString().find(error), std::string::npos)
        << refused.status().ToString();
  }
}

}  // namespace
}  // namespace ember
