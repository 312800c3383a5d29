// Tests for the `data:` config section and MakeDataSource.
#include "trainer/data_config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/test_util.h"
#include "trainer/interaction_source.h"

namespace ember::trainer {
namespace {

TEST(DataConfigTest, DefaultsToSynthetic) {
  Result<DataConfig> config = DataConfigFromYaml(YAML::Node(), "data", "");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->kind, "synthetic");
  Result<std::unique_ptr<DataSource>> source = MakeDataSource(*config);
  ASSERT_TRUE(source.ok());
  EXPECT_EQ((*source)->user_slots(), 3u);
}

TEST(DataConfigTest, ReadsInteractionsWithSideFeatures) {
  const YAML::Node node = YAML::Load(R"(
kind: interactions
interactions:
  path: ../data/ml-100k/u.data
  delimiter: "\t"
  header: false
  user: 0
  item: itemId
  rating: null
  timestamp: 3
  min_rating: 4
  negatives: 50
  seed: 9
  max_eval_users: 100
  user_history: 50
  causal_history: true
  user_features: {path: ../data/ml-100k/u.user, delimiter: "|", id: 0, features: [3, [1, 2]]}
  item_features: {path: /abs/u.item, delimiter: "|", id: 0,
                  features: [[5, 6, 7], {column: genres, separator: ";"}]}
synthetic: {vocabulary: 1000, exponent: 1.2, seed: 3, num_clusters: 10, signal: 0.5}
)");
  Result<DataConfig> config = DataConfigFromYaml(node, "data", "/etc/ember/configs");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  const InteractionOptions& options = config->interactions;
  EXPECT_EQ(config->kind, "interactions");
  EXPECT_EQ(options.path, "/etc/ember/data/ml-100k/u.data");
  EXPECT_EQ(options.format.delimiter, "\t");
  EXPECT_EQ(options.user.index, 0);
  EXPECT_EQ(options.item.name, "itemId");
  EXPECT_FALSE(options.rating.is_set());
  EXPECT_EQ(options.timestamp.index, 3);
  EXPECT_EQ(options.min_rating, 4);
  EXPECT_EQ(options.negatives, 50u);
  EXPECT_EQ(options.seed, 9u);
  EXPECT_EQ(options.max_eval_users, 100u);
  EXPECT_EQ(options.user_history, 50u);
  EXPECT_TRUE(options.causal_history);
  ASSERT_TRUE(options.user_features.has_value());
  EXPECT_EQ(options.user_features->path, "/etc/ember/data/ml-100k/u.user");
  EXPECT_EQ(options.user_features->format.delimiter, "|");
  ASSERT_EQ(options.user_features->features.size(), 2u);
  EXPECT_EQ(options.user_features->features[0].columns.size(), 1u);
  EXPECT_EQ(options.user_features->features[1].columns.size(), 2u);
  EXPECT_EQ(options.user_features->features[1].columns[1].index, 2);
  ASSERT_TRUE(options.item_features.has_value());
  EXPECT_EQ(options.item_features->path, "/abs/u.item");
  ASSERT_EQ(options.item_features->features.size(), 2u);
  EXPECT_TRUE(options.item_features->features[0].separator.empty());
  EXPECT_EQ(options.item_features->features[1].columns[0].name, "genres");
  EXPECT_EQ(options.item_features->features[1].separator, ";");
  EXPECT_EQ(config->synthetic.vocabulary, 1000u);
  EXPECT_EQ(config->synthetic.num_clusters, 10u);
  EXPECT_FLOAT_EQ(config->synthetic.signal, 0.5f);
}

TEST(DataConfigTest, RejectsUnknownKeysAndBadValuesByName) {
  auto error = [](const std::string& yaml) {
    Result<DataConfig> config = DataConfigFromYaml(YAML::Load(yaml), "data", "");
    return config.ok() ? std::string() : std::string(config.status().message());
  };
  EXPECT_NE(error("kind: synthetic\nsynthtic: {}").find("data.synthtic"), std::string::npos);
  EXPECT_NE(error("synthetic: {vocab: 10}").find("data.synthetic.vocab"), std::string::npos);
  EXPECT_NE(error("kind: parquet").find("data.kind"), std::string::npos);
  EXPECT_NE(error("kind: interactions").find("data.interactions"), std::string::npos);
  EXPECT_NE(error("interactions: {path: x, negativs: 3}").find("data.interactions.negativs"),
            std::string::npos);
  EXPECT_NE(error("interactions: {delimiter: ','}").find("data.interactions.path"),
            std::string::npos);
  EXPECT_NE(error("interactions: {path: x, user_features: {path: y, colour: 1}}")
                .find("data.interactions.user_features.colour"),
            std::string::npos);
  EXPECT_NE(error("interactions: {path: x, user: -3}").find("data.interactions.user"),
            std::string::npos);
  EXPECT_NE(error("interactions: {path: x, user_history: -1}")
                .find("data.interactions.user_history"),
            std::string::npos);
  EXPECT_NE(error("interactions: {path: x, causal_history: true}")
                .find("data.interactions.causal_history: needs a history"),
            std::string::npos);
  EXPECT_NE(error("synthetic: {signal: 2}").find("data.synthetic.signal"), std::string::npos);
  const std::string side = "interactions: {path: x, item_features: {path: y, features: [";
  EXPECT_NE(error(side + "{column: 3}]}}").find("features[0].separator"), std::string::npos);
  EXPECT_NE(error(side + "{column: 3, separator: ''}]}}").find("features[0].separator: must not"),
            std::string::npos);
  EXPECT_NE(error(side + "{columns: 3, separator: '|'}]}}").find("features[0].columns"),
            std::string::npos);
  EXPECT_NE(error(side + "{separator: '|'}]}}").find("features[0].column: missing"),
            std::string::npos);
}

TEST(DataConfigTest, MakesAnInteractionSource) {
  testing::TempDir dir;
  std::ofstream(dir.path() + "/r.tsv") << "a\tx\t5\t1\na\ty\t5\t2\nb\tx\t5\t1\nb\tz\t5\t2\n";
  const YAML::Node node =
      YAML::Load("kind: interactions\ninteractions: {path: r.tsv, negatives: 1}");
  Result<DataConfig> config = DataConfigFromYaml(node, "data", dir.path());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  Result<std::unique_ptr<DataSource>> source = MakeDataSource(*config);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  auto* interactions = dynamic_cast<InteractionSource*>(source->get());
  ASSERT_NE(interactions, nullptr);
  EXPECT_EQ(interactions->dataset()->num_train(), 2u);
  Batch batch;
  ASSERT_TRUE((*source)->Next(5, &batch).ok());
  EXPECT_EQ(batch.size, 5u);

  config->interactions.path = dir.path() + "/missing.tsv";
  source = MakeDataSource(*config);
  ASSERT_FALSE(source.ok());
  EXPECT_NE(source.status().message().find("missing.tsv"), std::string_view::npos);
}

TEST(DataConfigTest, QuoteAndCommentOfADelimitedFile) {
  auto read = [](const std::string& format) {
    return DataConfigFromYaml(
        YAML::Load("kind: interactions\ninteractions: {path: r.csv, user: 0, item: 1, " + format +
                   "}"),
        "data", "/d");
  };
  Result<DataConfig> defaults = read("delimiter: ','");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_EQ(defaults->interactions.format.quote, '"');
  EXPECT_EQ(defaults->interactions.format.comment, "");
  Result<DataConfig> set = read("delimiter: ',', quote: \"'\", comment: '#'");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->interactions.format.quote, '\'');
  EXPECT_EQ(set->interactions.format.comment, "#");
  Result<DataConfig> off = read("quote: ''");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(off->interactions.format.quote, '\0');
  Result<DataConfig> two = read("quote: '<>'");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("data.interactions.quote"), std::string::npos)
      << two.status().ToString();
  EXPECT_FALSE(read("delimiter: '\"', quote: '\"'").ok());
}

}  // namespace
}  // namespace ember::trainer
