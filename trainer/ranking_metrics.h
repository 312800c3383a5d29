// Leave-one-out ranking metrics: HR@k and NDCG@k of a held-out item among sampled negatives, and
// the item-popularity baseline they are judged against. Next to them, what says how far to trust
// them: their standard errors, the share of cases whose test item ties with a negative, the
// figures of warm cases (test item seen in training) and cold ones apart, and coverage (the
// distinct items that reach some case's top k).
//
// Ties are pessimistic: a negative scoring the same as the test item ranks above it, so a model
// whose rows are still identical (untrained) scores no hits rather than lucky ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

#include "trainer/interaction_dataset.h"

namespace ember::trainer {

// HR@k and NDCG@k of a set of cases.
struct RankingFigures {
  double hit_rate = 0;  // HR@k
  double ndcg = 0;      // NDCG@k
  size_t cases = 0;
};

struct RankingResult {
  double hit_rate = 0;  // HR@k
  double ndcg = 0;      // NDCG@k
  size_t cases = 0;
  double hit_rate_se = 0;  // standard errors of the two means
  double ndcg_se = 0;
  double tie_fraction = 0;  // cases whose test item scores the same as some negative
  RankingFigures warm;      // cases whose test item occurs in training
  RankingFigures cold;      // ... and those whose does not
  size_t items_recommended = 0;  // distinct candidate items in some case's top k
};

// The test item's 0-based rank: how many negatives (scores[1..]) score >= scores[0].
uint32_t PessimisticRank(std::span<const float> scores);

// What is known of a case beyond its scores.
struct RankingCase {
  std::span<const uint32_t> items;  // the candidates' item indices (empty: no coverage counted)
  bool warm = true;                 // the test item occurs in training
};

class RankingAccumulator {
 public:
  // Adds one case: scores[0] is the test item's score, the rest its negatives'. A hit when the
  // rank is below k, worth 1 / log2(rank + 2) NDCG.
  void Add(std::span<const float> scores, uint32_t k = 10, const RankingCase& info = {});
  // Adds another accumulator's cases (e.g. one per worker).
  void Merge(const RankingAccumulator& other);

  double hit_rate() const { return all_.hit_rate(); }
  double ndcg() const { return all_.ndcg(); }
  size_t cases() const { return all_.cases; }
  RankingResult result() const;

 private:
  struct Sums {
    size_t cases = 0;
    size_t hits = 0;
    double gain_sum = 0;      // of NDCG
    double gain_squares = 0;
    double hit_rate() const { return cases ? hits / static_cast<double>(cases) : 0.0; }
    double ndcg() const { return cases ? gain_sum / static_cast<double>(cases) : 0.0; }
    void Add(bool hit, double gain);
    void Merge(const Sums& other);
    RankingFigures figures() const { return {hit_rate(), ndcg(), cases}; }
  };
  Sums all_, warm_, cold_;
  size_t ties_ = 0;
  std::unordered_set<uint32_t> recommended_;
  std::vector<uint32_t> order_;  // scratch of Add
};

// The training items of every user, ascending: what full-catalogue ranking leaves out.
std::vector<std::vector<uint32_t>> TrainItemsByUser(const InteractionDataset& dataset);

// Adds a full-catalogue case: `item_scores` scores every item of the catalogue; the test item
// ranks against every other item not in `excluded` (ascending). Recall@k equals the hit rate,
// since each case has one relevant item. `scores` and `items` are scratch space.
void AddCatalogueCase(RankingAccumulator& accumulator, std::span<const float> item_scores,
                      uint32_t test_item, std::span<const uint32_t> excluded, bool warm,
                      uint32_t k, std::vector<float>* scores, std::vector<uint32_t>* items);

// HR@k / NDCG@k when every candidate is scored by its number of training positives: over the
// sampled candidates, or (full_catalogue) over every item the user did not train on.
RankingResult EvaluatePopularity(const InteractionDataset& dataset, uint32_t k,
                                 bool full_catalogue = false);

}  // namespace ember::trainer
