// Ranking metrics and the popularity baseline.
#include "trainer/ranking_metrics.h"

#include <cmath>
#include <vector>

#include "common/check.h"

namespace ember::trainer {

uint32_t PessimisticRank(std::span<const float> scores) {
  EMBER_CHECK(!scores.empty(), "ranking needs the test item's score");
  const float test = scores[0];
  uint32_t rank = 0;
  for (size_t i = 1; i < scores.size(); ++i) {
    // A NaN test score compares false everywhere; count it as ranked last.
    if (!(scores[i] < test)) ++rank;
  }
  return rank;
}

void RankingAccumulator::Add(std::span<const float> scores, uint32_t k) {
  const uint32_t rank = PessimisticRank(scores);
  ++cases_;
  if (rank < k) {
    ++hits_;
    ndcg_sum_ += 1.0 / std::log2(static_cast<double>(rank) + 2.0);
  }
}

void RankingAccumulator::Merge(const RankingAccumulator& other) {
  cases_ += other.cases_;
  hits_ += other.hits_;
  ndcg_sum_ += other.ndcg_sum_;
}

RankingResult EvaluatePopularity(const InteractionDataset& dataset, uint32_t k) {
  RankingAccumulator accumulator;
  std::vector<float> scores;
  const std::span<const uint32_t> counts = dataset.item_train_counts();
  for (const EvalCase& eval : dataset.eval_cases()) {
    scores.clear();
    for (const uint32_t item : eval.candidate_items) {
      scores.push_back(static_cast<float>(counts[item]));
    }
    accumulator.Add(scores, k);
  }
  return accumulator.result();
}

}  // namespace ember::trainer
