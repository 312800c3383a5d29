// Config overrides: keys set in a loaded YAML tree, and the errors that name a bad override.
#include "common/config_override.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/yaml_util.h"

namespace ember::config {
namespace {

constexpr const char* kConfig = R"(
cluster:
  servers: 2
tables:
  - {name: user_id, dim: 64}
  - {name: item_id, dim: 64}
model:
  hidden: [256, 128]
train:
  steps: 300
)";

// Parses each text and applies them all to `root`.
Status Apply(YAML::Node root, const std::vector<std::string>& texts) {
  std::vector<Override> overrides;
  for (const std::string& text : texts) {
    ASSIGN_OR_RETURN(Override parsed, ParseOverride(text));
    overrides.push_back(parsed);
  }
  return ApplyOverrides(root, overrides);
}

TEST(ConfigOverrideTest, ReplacesAValueOfTheFile) {
  YAML::Node root = YAML::Load(kConfig);
  ASSERT_TRUE(Apply(root, {"cluster.servers=3"}).ok());
  EXPECT_EQ(root["cluster"]["servers"].as<int>(), 3);
  EXPECT_EQ(root["train"]["steps"].as<int>(), 300);  // the rest is untouched
  EXPECT_EQ(root["tables"].size(), 2u);
}

TEST(ConfigOverrideTest, CreatesKeysAndSectionsTheFileLeavesOut) {
  YAML::Node root = YAML::Load(kConfig);
  ASSERT_TRUE(Apply(root, {"train.mode=bsp", "data.synthetic.seed=9"}).ok());
  EXPECT_EQ(root["train"]["mode"].as<std::string>(), "bsp");
  EXPECT_EQ(root["data"]["synthetic"]["seed"].as<int>(), 9);
  uint32_t seed = 0;
  ASSERT_TRUE(ReadOptional(root["data"]["synthetic"], "data.synthetic", "seed", &seed).ok());
  EXPECT_EQ(seed, 9u);
}

TEST(ConfigOverrideTest, SequenceEntriesByNameOrIndex) {
  YAML::Node root = YAML::Load(kConfig);
  ASSERT_TRUE(Apply(root, {"tables.item_id.dim=32", "tables.0.dim=16"}).ok());
  EXPECT_EQ(root["tables"][0]["dim"].as<int>(), 16);
  EXPECT_EQ(root["tables"][1]["dim"].as<int>(), 32);
  EXPECT_EQ(root["tables"][1]["name"].as<std::string>(), "item_id");
}

TEST(ConfigOverrideTest, AStarSetsTheKeyInEveryEntry) {
  YAML::Node root = YAML::Load(kConfig);
  ASSERT_TRUE(Apply(root, {"tables.*.optimizer.learning_rate=0.1", "tables.item_id.dim=8"}).ok());
  for (const YAML::Node& table : root["tables"]) {
    EXPECT_EQ(table["optimizer"]["learning_rate"].as<double>(), 0.1);
  }
  EXPECT_EQ(root["tables"][0]["dim"].as<int>(), 64);
  EXPECT_EQ(root["tables"][1]["dim"].as<int>(), 8);
}

TEST(ConfigOverrideTest, FlowSequencesAndNullValues) {
  YAML::Node root = YAML::Load(kConfig);
  ASSERT_TRUE(Apply(root, {"model.hidden=[64, 32, 16]", "train.steps=null"}).ok());
  EXPECT_EQ(root["model"]["hidden"].as<std::vector<int>>(), (std::vector<int>{64, 32, 16}));
  uint32_t steps = 7;  // null: the loader keeps its default
  ASSERT_TRUE(ReadOptional(root["train"], "train", "steps", &steps).ok());
  EXPECT_EQ(steps, 7u);
}

TEST(ConfigOverrideTest, TheLastOverrideOfAKeyWins) {
  YAML::Node root = YAML::Load(kConfig);
  ASSERT_TRUE(Apply(root, {"cluster.servers=3", "cluster.servers=5"}).ok());
  EXPECT_EQ(root["cluster"]["servers"].as<int>(), 5);
}

TEST(ConfigOverrideTest, ASpacedOverrideIsTrimmed) {
  auto parsed = ParseOverride(" cluster.servers = 3 ");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->path, "cluster.servers");
  EXPECT_EQ(parsed->value, "3");
}

TEST(ConfigOverrideTest, MalformedOverridesAreRejectedNamingThem) {
  for (const char* text : {"cluster.servers", "=3", "cluster..servers=3",
                           "cluster.servers=", "model.hidden=[1, 2", "cluster={servers: 3}"}) {
    auto parsed = ParseOverride(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(parsed.status().message().find("override"), std::string_view::npos)
        << parsed.status().ToString();
  }
  EXPECT_NE(ParseOverride("cluster.servers").status().message().find("KEY=VALUE"),
            std::string_view::npos);
}

TEST(ConfigOverrideTest, PathsTheTreeCannotHoldAreRejectedNamingThem) {
  const std::vector<std::pair<const char*, const char*>> cases = {
      {"train.steps.fast=1", "train.steps is a value"},
      {"tables.clicks.dim=8", "tables has no entry named 'clicks'"},
      {"tables.2.dim=8", "tables has 2 entries"},
      {"train=3", "train is a section"},
      {"tables.*=3", "tables.*: name a key"},
      {"model.hidden.*.x=3", "model.hidden.* is a value"},
  };
  for (const auto& [text, expected] : cases) {
    YAML::Node root = YAML::Load(kConfig);
    Status status = Apply(root, {text});
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(status.message().find(expected), std::string_view::npos) << status.ToString();
    EXPECT_NE(status.message().find(std::string("override ") + text), std::string_view::npos)
        << status.ToString();
  }
}

TEST(ConfigOverrideTest, LoaderErrorsAboutAnOverriddenKeyNameTheOverride) {
  YAML::Node root = YAML::Load(kConfig);
  const std::vector<Override> overrides = {*ParseOverride("cluster.servers=many")};
  ASSERT_TRUE(ApplyOverrides(root, overrides).ok());
  uint32_t servers = 0;
  Status read = ReadOptional(root["cluster"], "cluster", "servers", &servers);
  ASSERT_FALSE(read.ok());
  // No line of the file is named: the value came from the override.
  EXPECT_EQ(read.message(), "cluster.servers: cannot read 'many'");
  EXPECT_EQ(BlameOverride(read, overrides).message(),
            "overriding cluster.servers=many: cluster.servers: cannot read 'many'");
  Status other = InvalidArgument("train.steps: must be > 0");
  EXPECT_EQ(BlameOverride(other, overrides).message(), other.message());
  // A misspelt section is named as an unknown field of the level above it.
  const std::vector<Override> misspelt = {*ParseOverride("clustr.servers=3")};
  Status unknown = InvalidArgument("config.clustr: unknown field (known: cluster, train)");
  EXPECT_EQ(BlameOverride(unknown, misspelt).message(),
            "overriding clustr.servers=3: " + std::string(unknown.message()));
}

}  // namespace
}  // namespace ember::config
