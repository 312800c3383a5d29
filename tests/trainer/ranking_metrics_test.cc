// Tests for HR@k / NDCG@k with pessimistic ties, and the popularity baseline (on MovieLens 100K
// when the data set is present).
#include "trainer/ranking_metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "tests/test_util.h"

namespace ember::trainer {
namespace {

TEST(RankingMetricsTest, TiesCountAgainstTheTestItem) {
  RankingAccumulator metrics;
  metrics.Add(std::vector<float>(100, 0.0f));  // identical untrained scores
  EXPECT_EQ(metrics.cases(), 1u);
  EXPECT_EQ(metrics.hit_rate(), 0.0);
  EXPECT_EQ(metrics.ndcg(), 0.0);
  EXPECT_EQ(PessimisticRank(std::vector<float>{1.0f, 1.0f, 0.5f}), 1u);
  EXPECT_EQ(PessimisticRank(std::vector<float>{1.0f}), 0u);
}

TEST(RankingMetricsTest, HandComputedHitRateAndNdcg) {
  RankingAccumulator metrics;
  metrics.Add(std::vector<float>{0.5f, 0.9f, 0.1f, 0.7f}, 10);  // rank 2: 1/log2(4) = 0.5
  metrics.Add(std::vector<float>{2.0f, 1.0f, 0.0f}, 10);        // rank 0: 1
  metrics.Add(std::vector<float>{0.5f, 0.9f, 0.1f, 0.7f}, 2);   // rank 2 is not < 2: miss
  metrics.Add(std::vector<float>{0.0f, 3.0f, 1.0f}, 2);         // rank 2: miss
  EXPECT_EQ(metrics.cases(), 4u);
  EXPECT_DOUBLE_EQ(metrics.hit_rate(), 0.5);
  EXPECT_DOUBLE_EQ(metrics.ndcg(), (0.5 + 1.0) / 4);

  RankingAccumulator other;
  other.Add(std::vector<float>{1.0f, 0.0f, 2.0f}, 10);  // rank 1: 1/log2(3)
  metrics.Merge(other);
  EXPECT_EQ(metrics.cases(), 5u);
  EXPECT_DOUBLE_EQ(metrics.hit_rate(), 3.0 / 5);
  EXPECT_DOUBLE_EQ(metrics.ndcg(), (0.5 + 1.0 + 1.0 / std::log2(3.0)) / 5);
}

TEST(RankingMetricsTest, StandardErrorsTiesWarmColdAndCoverage) {
  RankingAccumulator metrics;
  const std::vector<uint32_t> items_a = {7, 1, 2, 3}, items_b = {8, 1, 4, 5};
  // Warm, rank 0 (gain 1); the top 2 are items 7 and 3.
  metrics.Add(std::vector<float>{0.9f, 0.1f, 0.2f, 0.5f}, 2, {items_a, true});
  // Cold, a tie with a negative: rank 1 (gain 1/log2(3)); the top 2 are 8 and 4 (equal scores
  // in candidate order).
  metrics.Add(std::vector<float>{0.4f, 0.0f, 0.4f, 0.1f}, 2, {items_b, false});
  // Warm, rank 3: a miss; the top 2 are 1 and 2.
  metrics.Add(std::vector<float>{0.0f, 0.9f, 0.8f, 0.7f}, 2, {items_a, true});
  const RankingResult result = metrics.result();
  EXPECT_EQ(result.cases, 3u);
  EXPECT_DOUBLE_EQ(result.hit_rate, 2.0 / 3);
  // Sample standard deviation over sqrt(n): hits {1, 1, 0}, gains {1, g, 0}.
  EXPECT_NEAR(result.hit_rate_se, std::sqrt((1.0 / 3) / 3), 1e-12);
  const double g = 1.0 / std::log2(3.0), mean = (1 + g) / 3;
  const double variance =
      ((1 - mean) * (1 - mean) + (g - mean) * (g - mean) + mean * mean) / 2;
  EXPECT_NEAR(result.ndcg_se, std::sqrt(variance / 3), 1e-12);
  EXPECT_DOUBLE_EQ(result.tie_fraction, 1.0 / 3);
  EXPECT_EQ(result.warm.cases, 2u);
  EXPECT_DOUBLE_EQ(result.warm.hit_rate, 0.5);
  EXPECT_DOUBLE_EQ(result.warm.ndcg, 0.5);
  EXPECT_EQ(result.cold.cases, 1u);
  EXPECT_DOUBLE_EQ(result.cold.ndcg, g);
  EXPECT_EQ(result.items_recommended, 6u);  // 7, 3, 4, 8, 1, 2
}

TEST(RankingMetricsTest, FullCatalogueRanksAgainstEveryItemTheUserDidNotTrainOn) {
  const std::vector<float> item_scores = {0.5f, 0.9f, 0.1f, 0.7f, 0.6f};
  const std::vector<uint32_t> trained = {1};  // item 1 outscores the test item but is left out
  std::vector<float> scores;
  std::vector<uint32_t> items;
  RankingAccumulator within_10, within_2;
  AddCatalogueCase(within_10, item_scores, 0, trained, true, 10, &scores, &items);
  AddCatalogueCase(within_2, item_scores, 0, trained, true, 2, &scores, &items);
  EXPECT_EQ(items, (std::vector<uint32_t>{0, 2, 3, 4}));
  EXPECT_DOUBLE_EQ(within_10.ndcg(), 0.5);  // rank 2 (items 3 and 4 score higher)
  EXPECT_EQ(within_2.hit_rate(), 0.0);
  EXPECT_EQ(within_2.result().items_recommended, 2u);  // 3 and 4
}

TEST(RankingMetricsTest, PopularityScoresByTrainingCounts) {
  testing::TempDir dir;
  // Held out: e -> q, a -> p, b -> x, f -> z (tie on time: the later line). Training counts:
  // p 3, q 2, y 1, x 0, z 0. e's q and a's p outscore any negative they can draw; b's x and f's
  // z have count 0 and face at least one negative with a higher or equal count.
  const std::string path = dir.path() + "/u.data";
  std::ofstream(path) << "c\tp\t5\t1\nd\tp\t5\t1\ne\tp\t5\t1\ne\tq\t5\t2\n"
                         "a\tq\t5\t1\na\tp\t5\t2\n"
                         "b\tq\t5\t1\nb\tx\t5\t2\n"
                         "f\ty\t5\t1\nf\tz\t5\t1\n";
  InteractionOptions options;
  options.path = path;
  options.negatives = 2;
  Result<std::shared_ptr<InteractionDataset>> data = InteractionDataset::Load(options);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  RankingAccumulator expected;
  for (const EvalCase& eval : (*data)->eval_cases()) {
    std::vector<float> scores;
    for (const std::string& id : eval.candidate_ids) {
      scores.push_back(static_cast<float>((*data)->TrainCount(id)));
    }
    expected.Add(scores, 1);
  }
  const RankingResult result = EvaluatePopularity(**data, 1);
  EXPECT_EQ(result.cases, 4u);  // a, b, e, f
  EXPECT_DOUBLE_EQ(result.hit_rate, expected.hit_rate());
  EXPECT_DOUBLE_EQ(result.ndcg, expected.ndcg());
  EXPECT_DOUBLE_EQ(result.hit_rate, 0.5);
  EXPECT_DOUBLE_EQ(result.ndcg, 0.5);

  // Over the whole catalogue, less each user's training items: e's q and a's p still come
  // first; b's x and f's z (never trained on: cold) tie with the other count-0 item and trail
  // the popular ones.
  const RankingResult full = EvaluatePopularity(**data, 1, /*full_catalogue=*/true);
  EXPECT_EQ(full.cases, 4u);
  EXPECT_DOUBLE_EQ(full.hit_rate, 0.5);
  EXPECT_EQ(full.warm.cases, 2u);
  EXPECT_DOUBLE_EQ(full.warm.hit_rate, 1.0);
  EXPECT_EQ(full.cold.cases, 2u);
  EXPECT_DOUBLE_EQ(full.cold.hit_rate, 0.0);
  EXPECT_DOUBLE_EQ(full.tie_fraction, 0.5);
  EXPECT_EQ(full.items_recommended, 2u);  // q for e, p for the others
}

TEST(RankingMetricsTest, PopularityOnMovieLens100k) {
  const std::string path = testing::SharedDataDir() + "/ml-100k/u.data";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "MovieLens 100K not found at " << path;
  InteractionOptions options;
  options.path = path;
  Result<std::shared_ptr<InteractionDataset>> data = InteractionDataset::Load(options);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ((*data)->num_users(), 943u);
  EXPECT_EQ((*data)->num_items(), 1682u);
  EXPECT_EQ((*data)->eval_cases().size(), 943u);
  EXPECT_EQ((*data)->num_train(), 100'000u - 943u);
  const RankingResult result = EvaluatePopularity(**data, 10);
  std::cout << "popularity on ml-100k: HR@10 " << result.hit_rate << ", NDCG@10 " << result.ndcg
            << " over " << result.cases << " users\n";
  EXPECT_GE(result.hit_rate, 0.35);
  EXPECT_LE(result.hit_rate, 0.47);
  EXPECT_GT(result.ndcg, 0.15);
  EXPECT_LT(result.ndcg, result.hit_rate);
}

}  // namespace
}  // namespace ember::trainer
