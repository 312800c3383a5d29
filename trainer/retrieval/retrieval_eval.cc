// Retrieval quality and speed (retrieval_eval.h).
#include "trainer/retrieval/retrieval_eval.h"

#include <algorithm>
#include <chrono>

#include "trainer/ranking_eval.h"

namespace ember::trainer {
namespace {

using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> values, double quantile) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t rank = static_cast<size_t>(quantile * static_cast<double>(values.size()));
  return values[std::min(values.size() - 1, rank)];
}

bool Contains(const std::vector<uint32_t>& items, uint32_t item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

}  // namespace

Result<RetrievalQuality> EvaluateRetrievalQuality(Recommender& recommender, uint32_t k) {
  const InteractionDataset& dataset = recommender.dataset();
  const std::vector<EvalCase>& cases = dataset.eval_cases();
  if (cases.empty()) return FailedPrecondition("retrieval: the dataset has no held-out cases");
  std::vector<uint32_t> users;
  for (const EvalCase& c : cases) users.push_back(c.user);
  ASSIGN_OR_RETURN(std::vector<float> user_vectors, recommender.EncodeUsers(users));
  const std::shared_ptr<const ItemIndex> index = recommender.index();
  const uint32_t dim = index->dim();
  RetrievalQuality quality;
  quality.cases = cases.size();
  for (size_t c = 0; c < cases.size(); ++c) {
    const std::span<const float> query(user_vectors.data() + c * dim, dim);
    const auto excluded = recommender.TrainedItems(cases[c].user);
    const ItemHits approximate = index->Search(query, k, excluded);
    const ItemHits exact = index->ExactSearch(query, k, excluded);
    size_t shared = 0;
    for (uint32_t item : approximate.items) shared += Contains(exact.items, item);
    quality.ann_recall += exact.items.empty() ? 1.0 : double(shared) / exact.items.size();
    const uint32_t test = cases[c].candidate_items[0];
    quality.served_recall += Contains(approximate.items, test);
    quality.exact_recall += Contains(exact.items, test);
  }
  quality.ann_recall /= cases.size();
  quality.served_recall /= cases.size();
  quality.exact_recall /= cases.size();
  // The trainer's own evaluation of the same vectors: user i's row is its case's.
  std::vector<float> by_user(dataset.num_users() * size_t{dim}, 0.0f);
  for (size_t c = 0; c < cases.size(); ++c) {
    std::copy_n(user_vectors.begin() + c * dim, dim, by_user.begin() + size_t{users[c]} * dim);
  }
  ASSIGN_OR_RETURN(RankingResult trainer,
                   EvaluateEncoded(dataset, cases, by_user, index->vectors(), dim, k,
                                   /*full_catalogue=*/true));
  quality.trainer_recall = trainer.hit_rate;
  return quality;
}

Result<RetrievalSpeed> MeasureRetrievalSpeed(Recommender& recommender, uint32_t k,
                                             size_t queries) {
  const std::vector<EvalCase>& cases = recommender.dataset().eval_cases();
  if (cases.empty()) return FailedPrecondition("retrieval: the dataset has no held-out cases");
  std::vector<double> whole_ms, search_ms;
  const auto start = Clock::now();
  for (size_t q = 0; q < queries; ++q) {
    const uint32_t user = cases[q % cases.size()].user;
    const auto began = Clock::now();
    const uint32_t one[] = {user};
    ASSIGN_OR_RETURN(std::vector<float> query, recommender.EncodeUsers(one));
    const auto encoded = Clock::now();
    const ItemHits hits = recommender.index()->Search(query, k, recommender.TrainedItems(user));
    const auto done = Clock::now();
    if (hits.items.empty()) return Internal("retrieval: a query found no item");
    whole_ms.push_back(std::chrono::duration<double, std::milli>(done - began).count());
    search_ms.push_back(std::chrono::duration<double, std::milli>(done - encoded).count());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  RetrievalSpeed speed;
  speed.queries = queries;
  speed.queries_per_second = seconds > 0 ? queries / seconds : 0;
  speed.p50_ms = Percentile(whole_ms, 0.5);
  speed.p99_ms = Percentile(whole_ms, 0.99);
  speed.search_p50_ms = Percentile(search_ms, 0.5);
  speed.search_p99_ms = Percentile(search_ms, 0.99);
  return speed;
}

}  // namespace ember::trainer
