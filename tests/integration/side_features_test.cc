// A multi-valued side feature end to end: items tagged "g3|g5" in a CSV column train a slot that
// averages one row per tag, on the CPU backend.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

#include "tests/integration/small_interactions.h"

namespace ember {
namespace {

using SideFeaturesTest = testing::SmallInteractionsTest;

// Each of the 60 items carries its taste group's tag and one or two random others; a few none.
void WriteItemTags(const std::string& path) {
  std::mt19937 rng(23);
  std::ofstream out(path);
  out << "item,title,tags\n";
  for (int item = 0; item < 60; ++item) {
    out << "i" << item << ",\"Item " << item << ", a title\",";
    if (item % 10 == 9) {
      out << "\n";
      continue;
    }
    out << "\"g" << item % 6;
    for (int extra = std::uniform_int_distribution<int>(1, 2)(rng); extra > 0; --extra) {
      out << "|g" << std::uniform_int_distribution<int>(0, 9)(rng);
    }
    out << "\"\n";
  }
}

TEST_F(SideFeaturesTest, AMultiValuedTagColumnTrainsAndBeatsMostPopular) {
  WriteItemTags(dir_.path() + "/items.csv");
  std::string config = testing::kSmallInteractionsConfig;
  auto replace = [&](const std::string& from, const std::string& to) {
    const size_t at = config.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    config.replace(at, from.size(), to);
  };
  replace("  - {name: item, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}\n",
          "  - {name: item, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}\n"
          "  - {name: tag, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}\n");
  replace("  item_slots: 1\n", "  item_slots: 2\n");
  replace("  item_tables: [item]\n", "  item_tables: [item, tag]\n");
  replace("    validation: true\n",
          "    item_features: {path: items.csv, delimiter: \",\", header: true, id: item,\n"
          "                    features: [{column: tags, separator: \"|\"}]}\n");
  std::ofstream(config_) << config;

  const nlohmann::json json = Run({"train.epochs=8"});
  ASSERT_TRUE(json.contains("eval")) << json;
  const nlohmann::json& eval = json["eval"];
  EXPECT_GT(eval["hit_rate"].get<double>(), eval["popularity_hit_rate"].get<double>() + 0.2)
      << eval;
  // The tag table holds the tags' rows (10 tags, and the empty tag list), next to 60 items.
  std::printf("tags: HR@10 %.4f NDCG@10 %.4f (most-popular HR@10 %.4f), %d rows\n",
              eval["hit_rate"].get<double>(), eval["ndcg"].get<double>(),
              eval["popularity_hit_rate"].get<double>(), json["servers"][0]["rows"].get<int>());
  EXPECT_EQ(json["servers"][0]["rows"].get<int>(), 150 + 60 + 11);
}

}  // namespace
}  // namespace ember
