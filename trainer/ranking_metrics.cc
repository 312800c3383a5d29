// Ranking metrics and the popularity baseline.
#include "trainer/ranking_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
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

void RankingAccumulator::Sums::Add(bool hit, double gain) {
  ++cases;
  hits += hit;
  gain_sum += gain;
  gain_squares += gain * gain;
}

void RankingAccumulator::Sums::Merge(const Sums& other) {
  cases += other.cases;
  hits += other.hits;
  gain_sum += other.gain_sum;
  gain_squares += other.gain_squares;
}

void RankingAccumulator::Add(std::span<const float> scores, uint32_t k, const RankingCase& info) {
  const uint32_t rank = PessimisticRank(scores);
  const bool hit = rank < k;
  const double gain = hit ? 1.0 / std::log2(static_cast<double>(rank) + 2.0) : 0.0;
  all_.Add(hit, gain);
  (info.warm ? warm_ : cold_).Add(hit, gain);
  ties_ += std::find(scores.begin() + 1, scores.end(), scores[0]) != scores.end();
  if (info.items.size() == scores.size()) {
    // The k best candidates (by score; among equals, the first).
    std::vector<uint32_t>& order = order_;  // reused: a full catalogue per case
    order.resize(scores.size());
    std::iota(order.begin(), order.end(), 0u);
    const size_t top = std::min<size_t>(k, order.size());
    std::partial_sort(order.begin(), order.begin() + top, order.end(),
                      [&](uint32_t a, uint32_t b) {
                        return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
                      });
    for (size_t i = 0; i < top; ++i) recommended_.insert(info.items[order[i]]);
  }
}

void RankingAccumulator::Merge(const RankingAccumulator& other) {
  all_.Merge(other.all_);
  warm_.Merge(other.warm_);
  cold_.Merge(other.cold_);
  ties_ += other.ties_;
  recommended_.insert(other.recommended_.begin(), other.recommended_.end());
}

RankingResult RankingAccumulator::result() const {
  RankingResult result;
  result.hit_rate = all_.hit_rate();
  result.ndcg = all_.ndcg();
  result.cases = all_.cases;
  if (all_.cases > 1) {
    // The sample variance of the per-case values over n, square-rooted. A hit is 0 or 1, so
    // the sum of its squares is the number of hits.
    const double n = static_cast<double>(all_.cases);
    auto standard_error = [n](double sum, double squares) {
      const double mean = sum / n;
      return std::sqrt(std::max(0.0, (squares - n * mean * mean) / (n - 1)) / n);
    };
    const double hits = static_cast<double>(all_.hits);
    result.hit_rate_se = standard_error(hits, hits);
    result.ndcg_se = standard_error(all_.gain_sum, all_.gain_squares);
  }
  result.tie_fraction = all_.cases ? ties_ / static_cast<double>(all_.cases) : 0.0;
  result.warm = warm_.figures();
  result.cold = cold_.figures();
  result.items_recommended = recommended_.size();
  return result;
}

std::vector<std::vector<uint32_t>> TrainItemsByUser(const InteractionDataset& dataset) {
  std::vector<std::vector<uint32_t>> items(dataset.num_users());
  for (const TrainPair& pair : dataset.train()) items[pair.user].push_back(pair.item);
  for (std::vector<uint32_t>& list : items) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  return items;
}

void AddCatalogueCase(RankingAccumulator& accumulator, std::span<const float> item_scores,
                      uint32_t test_item, std::span<const uint32_t> excluded, bool warm,
                      uint32_t k, std::vector<float>* scores, std::vector<uint32_t>* items) {
  scores->assign(1, item_scores[test_item]);
  items->assign(1, test_item);
  size_t next_excluded = 0;
  for (uint32_t item = 0; item < item_scores.size(); ++item) {
    while (next_excluded < excluded.size() && excluded[next_excluded] < item) ++next_excluded;
    if (item == test_item ||
        (next_excluded < excluded.size() && excluded[next_excluded] == item)) {
      continue;
    }
    scores->push_back(item_scores[item]);
    items->push_back(item);
  }
  accumulator.Add(*scores, k, {*items, warm});
}

RankingResult EvaluatePopularity(const InteractionDataset& dataset, uint32_t k,
                                 bool full_catalogue) {
  RankingAccumulator accumulator;
  std::vector<float> scores;
  std::vector<uint32_t> items;
  const std::span<const uint32_t> counts = dataset.item_train_counts();
  if (full_catalogue) {
    const std::vector<float> by_count(counts.begin(), counts.end());
    const std::vector<std::vector<uint32_t>> trained = TrainItemsByUser(dataset);
    for (const EvalCase& eval : dataset.eval_cases()) {
      const uint32_t test = eval.candidate_items[0];
      AddCatalogueCase(accumulator, by_count, test, trained[eval.user], counts[test] > 0, k,
                       &scores, &items);
    }
    return accumulator.result();
  }
  for (const EvalCase& eval : dataset.eval_cases()) {
    scores.clear();
    for (const uint32_t item : eval.candidate_items) {
      scores.push_back(static_cast<float>(counts[item]));
    }
    accumulator.Add(scores, k, {eval.candidate_items, counts[eval.candidate_items[0]] > 0});
  }
  return accumulator.result();
}

}  // namespace ember::trainer
