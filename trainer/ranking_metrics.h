// Leave-one-out ranking metrics: HR@k and NDCG@k of a held-out item among sampled negatives, and
// the item-popularity baseline they are judged against.
//
// Ties are pessimistic: a negative scoring the same as the test item ranks above it, so a model
// whose rows are still identical (untrained) scores no hits rather than lucky ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "trainer/interaction_dataset.h"

namespace ember::trainer {

struct RankingResult {
  double hit_rate = 0;  // HR@k
  double ndcg = 0;      // NDCG@k
  size_t cases = 0;
};

// The test item's 0-based rank: how many negatives (scores[1..]) score >= scores[0].
uint32_t PessimisticRank(std::span<const float> scores);

class RankingAccumulator {
 public:
  // Adds one case: scores[0] is the test item's score, the rest its negatives'. A hit when the
  // rank is below k, worth 1 / log2(rank + 2) NDCG.
  void Add(std::span<const float> scores, uint32_t k = 10);
  // Adds another accumulator's cases (e.g. one per worker).
  void Merge(const RankingAccumulator& other);

  double hit_rate() const { return cases_ ? hits_ / static_cast<double>(cases_) : 0.0; }
  double ndcg() const { return cases_ ? ndcg_sum_ / static_cast<double>(cases_) : 0.0; }
  size_t cases() const { return cases_; }
  RankingResult result() const { return RankingResult{hit_rate(), ndcg(), cases_}; }

 private:
  size_t cases_ = 0;
  size_t hits_ = 0;
  double ndcg_sum_ = 0;
};

// HR@k / NDCG@k when every candidate is scored by its number of training positives.
RankingResult EvaluatePopularity(const InteractionDataset& dataset, uint32_t k);

}  // namespace ember::trainer
