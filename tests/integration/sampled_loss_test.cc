// The sampled losses end to end: a cluster trains the small interaction data with each of them,
// and the model beats the most-popular baseline on the test split.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/small_interactions.h"

namespace ember {
namespace {

class SampledLossRunTest : public testing::SmallInteractionsTest,
                           public ::testing::WithParamInterface<const char*> {};

TEST_P(SampledLossRunTest, LearnsAndBeatsMostPopular) {
  const nlohmann::json json =
      Run({"data.interactions.validation=false", "model.loss=" + std::string(GetParam()),
           "model.negatives=4", "train.epochs=8", "train.log_every=20"});
  ASSERT_TRUE(json.contains("eval")) << json;
  const nlohmann::json& eval = json["eval"];
  EXPECT_LT(json["loss_end"].get<double>(), json["loss_start"].get<double>()) << json;
  EXPECT_GT(eval["hit_rate"].get<double>(), eval["popularity_hit_rate"].get<double>() + 0.2)
      << eval;
  std::printf("%s: HR@10 %.4f NDCG@10 %.4f (most-popular HR@10 %.4f)\n", GetParam(),
              eval["hit_rate"].get<double>(), eval["ndcg"].get<double>(),
              eval["popularity_hit_rate"].get<double>());
}

INSTANTIATE_TEST_SUITE_P(Losses, SampledLossRunTest,
                         ::testing::Values("sampled_softmax", "bce", "bpr"));

TEST_F(SampledLossRunTest, SyntheticDataCannotSampleNegatives) {
  const std::string log = dir_.path() + "/refused.log";
  ChildProcess cluster({EMBER_BINARY, "cluster", "--config",
                        std::string(EMBER_SOURCE_DIR) + "/configs/tt-bench.yaml", "--set",
                        "model.loss=bpr", "--set", "model.negatives=2"},
                       log);
  EXPECT_EQ(cluster.WaitExit(std::chrono::seconds(60)), 2);
  EXPECT_NE(testing::ReadFile(log).find("draws its negatives from the catalogue of interaction "
                                        "data; data.kind is 'synthetic'"),
            std::string::npos)
      << testing::ReadFile(log);
}

}  // namespace
}  // namespace ember
