// Ranking evaluation implementation.
#include "trainer/ranking_eval.h"

#include <cblas.h>

#include <algorithm>
#include <numeric>

#include "trainer/tower_batch.h"

namespace ember::trainer {
namespace {

// Encodes `entities` (users or items, as `tower` says) with one tower, their rows pulled from
// the cluster; out is entities x output_dim.
Status EncodeTower(ps::Client& client, Backend& backend, Tower tower,
                   const EntityKeys& entity_keys, std::span<const uint32_t> entities,
                   const std::vector<std::string>& tables, const ModelConfig& model,
                   std::vector<float>* out) {
  return EncodeEntities(backend, tower, entity_keys, entities, model,
                        [&](TowerBatch& batch) {
                          std::vector<ps::Ticket> pulls;
                          batch.StartPull(client, tables, &pulls);
                          return WaitAll(pulls).WithContext("evaluation pull");
                        },
                        out);
}

// Ranks test items against a whole encoded catalogue (items x dim): each batch of users is scored
// against every item with one matrix product, and each test item ranks against the items its user
// did not train on.
class CatalogueRanking {
 public:
  CatalogueRanking(const InteractionDataset& dataset, std::span<const float> catalogue,
                   uint32_t dim, uint32_t k)
      : catalogue_(catalogue), dim_(dim), k_(k), num_items_(dataset.num_items()),
        counts_(dataset.item_train_counts()), trained_(TrainItemsByUser(dataset)) {}

  // Adds `cases`, whose users are encoded in `users` (cases.size() x dim).
  void AddCases(std::span<const EvalCase> cases, std::span<const float> users) {
    const size_t batch = cases.size();
    item_scores_.resize(batch * num_items_);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(batch),
                static_cast<int>(num_items_), static_cast<int>(dim_), 1.0f, users.data(),
                static_cast<int>(dim_), catalogue_.data(), static_cast<int>(dim_), 0.0f,
                item_scores_.data(), static_cast<int>(num_items_));
    for (size_t c = 0; c < batch; ++c) {
      const uint32_t test = cases[c].candidate_items[0];
      AddCatalogueCase(accumulator_,
                       std::span<const float>(item_scores_.data() + c * num_items_, num_items_),
                       test, trained_[cases[c].user], counts_[test] > 0, k_, &scores_, &items_);
    }
  }
  RankingResult result() const { return accumulator_.result(); }

 private:
  const std::span<const float> catalogue_;
  const uint32_t dim_, k_;
  const size_t num_items_;
  const std::span<const uint32_t> counts_;
  const std::vector<std::vector<uint32_t>> trained_;
  RankingAccumulator accumulator_;
  std::vector<float> item_scores_, scores_;
  std::vector<uint32_t> items_;
};

// Adds one sampled case: the dot products of `user` with its candidates' vectors, the row of
// candidate i at item_vectors + item_row(i) * dim.
template <typename ItemRow>
void AddSampledCase(RankingAccumulator& accumulator, const InteractionDataset& dataset,
                    const EvalCase& eval_case, const float* user, const float* item_vectors,
                    uint32_t dim, uint32_t k, ItemRow item_row, std::vector<float>* scores) {
  const std::vector<uint32_t>& candidates = eval_case.candidate_items;
  scores->assign(candidates.size(), 0.0f);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const float* item = item_vectors + item_row(i) * dim;
    float dot = 0;
    for (uint32_t d = 0; d < dim; ++d) dot += user[d] * item[d];
    (*scores)[i] = dot;
  }
  accumulator.Add(*scores, k, {candidates, dataset.item_train_counts()[candidates[0]] > 0});
}

// Full-catalogue ranking: every item is encoded once, every user batch is scored against all of
// them with one matrix product, and each test item ranks against the items its user did not
// train on.
Result<RankingResult> EvaluateFullCatalogue(ps::Client& client, Backend& backend,
                                            const InteractionDataset& dataset,
                                            const std::vector<EvalCase>& cases,
                                            const ModelConfig& model, const TrainOptions& options) {
  const uint32_t out_dim = model.output_dim;
  const size_t num_items = dataset.num_items();
  std::vector<float> catalogue(num_items * out_dim), encoded;
  constexpr size_t kItemsPerEncode = 4096;
  std::vector<uint32_t> entities;
  for (size_t first = 0; first < num_items; first += kItemsPerEncode) {
    const size_t last = std::min(num_items, first + kItemsPerEncode);
    entities.resize(last - first);
    std::iota(entities.begin(), entities.end(), static_cast<uint32_t>(first));
    RETURN_IF_ERROR(EncodeTower(client, backend, Tower::kItem, dataset.items(), entities,
                                options.item_tables, model, &encoded));
    std::copy(encoded.begin(), encoded.end(), catalogue.begin() + first * out_dim);
  }
  CatalogueRanking ranking(dataset, catalogue, out_dim, options.eval_k);
  std::vector<float> users;
  for (size_t first = 0; first < cases.size(); first += options.eval_batch_users) {
    const size_t last = std::min(cases.size(), first + options.eval_batch_users);
    entities.clear();
    for (size_t c = first; c < last; ++c) entities.push_back(cases[c].user);
    RETURN_IF_ERROR(EncodeTower(client, backend, Tower::kUser, dataset.users(), entities,
                                options.user_tables, model, &users));
    ranking.AddCases(std::span(cases).subspan(first, last - first), users);
  }
  return ranking.result();
}

}  // namespace

Result<RankingResult> EvaluateRanking(ps::Client& client, Backend& backend,
                                      const InteractionDataset& dataset, const ModelConfig& model,
                                      const TrainOptions& options) {
  return EvaluateRanking(client, backend, dataset, dataset.eval_cases(), model, options);
}

Result<RankingResult> EvaluateRanking(ps::Client& client, Backend& backend,
                                      const InteractionDataset& dataset,
                                      const std::vector<EvalCase>& cases,
                                      const ModelConfig& model, const TrainOptions& options) {
  if (options.eval_protocol == "full") {
    return EvaluateFullCatalogue(client, backend, dataset, cases, model, options);
  }
  const uint32_t out_dim = model.output_dim;
  RankingAccumulator accumulator;
  std::vector<float> users, items, scores;
  std::vector<uint32_t> user_entities, item_entities;
  for (size_t first = 0; first < cases.size(); first += options.eval_batch_users) {
    const size_t last = std::min(cases.size(), first + options.eval_batch_users);
    user_entities.clear();
    item_entities.clear();
    for (size_t c = first; c < last; ++c) {
      user_entities.push_back(cases[c].user);
      item_entities.insert(item_entities.end(), cases[c].candidate_items.begin(),
                           cases[c].candidate_items.end());
    }
    RETURN_IF_ERROR(EncodeTower(client, backend, Tower::kUser, dataset.users(), user_entities,
                                options.user_tables, model, &users));
    RETURN_IF_ERROR(EncodeTower(client, backend, Tower::kItem, dataset.items(), item_entities,
                                options.item_tables, model, &items));
    size_t item_row = 0;
    for (size_t c = first; c < last; ++c) {
      AddSampledCase(accumulator, dataset, cases[c], users.data() + (c - first) * out_dim,
                     items.data(), out_dim, options.eval_k,
                     [&](size_t i) { return item_row + i; }, &scores);
      item_row += cases[c].candidate_items.size();
    }
  }
  return accumulator.result();
}

Result<RankingResult> EvaluateEncoded(const InteractionDataset& dataset,
                                      const std::vector<EvalCase>& cases,
                                      std::span<const float> user_vectors,
                                      std::span<const float> item_vectors, uint32_t dim,
                                      uint32_t k, bool full_catalogue) {
  if (dim == 0) return InvalidArgument("the vectors have no columns");
  if (user_vectors.size() != dataset.num_users() * dim) {
    return InvalidArgument("user vectors: expected " + std::to_string(dataset.num_users()) +
                           " rows (one per user) of " + std::to_string(dim) + ", got " +
                           std::to_string(user_vectors.size()) + " values");
  }
  if (item_vectors.size() != dataset.num_items() * dim) {
    return InvalidArgument("item vectors: expected " + std::to_string(dataset.num_items()) +
                           " rows (one per item) of " + std::to_string(dim) + ", got " +
                           std::to_string(item_vectors.size()) + " values");
  }
  if (full_catalogue) {
    CatalogueRanking ranking(dataset, item_vectors, dim, k);
    constexpr size_t kUsersPerProduct = 256;
    std::vector<float> users;
    for (size_t first = 0; first < cases.size(); first += kUsersPerProduct) {
      const size_t last = std::min(cases.size(), first + kUsersPerProduct);
      users.clear();
      for (size_t c = first; c < last; ++c) {
        const float* user = user_vectors.data() + size_t{cases[c].user} * dim;
        users.insert(users.end(), user, user + dim);
      }
      ranking.AddCases(std::span(cases).subspan(first, last - first), users);
    }
    return ranking.result();
  }
  RankingAccumulator accumulator;
  std::vector<float> scores;
  for (const EvalCase& eval_case : cases) {
    AddSampledCase(accumulator, dataset, eval_case,
                   user_vectors.data() + size_t{eval_case.user} * dim, item_vectors.data(), dim,
                   k, [&](size_t i) { return size_t{eval_case.candidate_items[i]}; }, &scores);
  }
  return accumulator.result();
}

}  // namespace ember::trainer
