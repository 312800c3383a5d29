// Ranking evaluation implementation.
#include "trainer/ranking_eval.h"

#include <cblas.h>

#include <algorithm>
#include <numeric>

#include "trainer/tower_batch.h"

namespace ember::trainer {
namespace {

// Encodes `entities` (users or items, as `tower` says) with one tower; out is entities x
// output_dim.
Status EncodeTower(ps::Client& client, Backend& backend, Tower tower,
                   const EntityKeys& entity_keys, std::span<const uint32_t> entities,
                   const std::vector<std::string>& tables, const ModelConfig& model,
                   std::vector<float>* out) {
  const uint32_t samples = static_cast<uint32_t>(entities.size());
  std::vector<std::vector<uint64_t>> keys;
  std::vector<std::vector<uint32_t>> offsets;
  entity_keys.StartBatch(&keys, &offsets);
  for (const uint32_t entity : entities) entity_keys.AppendSample(entity, &keys, &offsets);
  TowerBatch batch;
  batch.Prepare(keys, model.embedding_dim, offsets);
  std::vector<ps::Ticket> pulls;
  batch.StartPull(client, tables, &pulls);
  RETURN_IF_ERROR(WaitAll(pulls).WithContext("evaluation pull"));
  out->resize(size_t{samples} * model.output_dim);
  return backend.Encode(tower, samples, batch.Input(), *out);
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
  const std::vector<std::vector<uint32_t>> trained = TrainItemsByUser(dataset);
  const std::span<const uint32_t> counts = dataset.item_train_counts();
  RankingAccumulator accumulator;
  std::vector<float> users, item_scores, scores;
  std::vector<uint32_t> items;
  for (size_t first = 0; first < cases.size(); first += options.eval_batch_users) {
    const size_t last = std::min(cases.size(), first + options.eval_batch_users);
    entities.clear();
    for (size_t c = first; c < last; ++c) entities.push_back(cases[c].user);
    RETURN_IF_ERROR(EncodeTower(client, backend, Tower::kUser, dataset.users(), entities,
                                options.user_tables, model, &users));
    const size_t batch = last - first;
    item_scores.resize(batch * num_items);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(batch),
                static_cast<int>(num_items), static_cast<int>(out_dim), 1.0f, users.data(),
                static_cast<int>(out_dim), catalogue.data(), static_cast<int>(out_dim), 0.0f,
                item_scores.data(), static_cast<int>(num_items));
    for (size_t c = first; c < last; ++c) {
      const uint32_t test = cases[c].candidate_items[0];
      AddCatalogueCase(accumulator,
                       std::span<const float>(item_scores.data() + (c - first) * num_items,
                                              num_items),
                       test, trained[cases[c].user], counts[test] > 0, options.eval_k, &scores,
                       &items);
    }
  }
  return accumulator.result();
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
      const float* user = users.data() + (c - first) * out_dim;
      const size_t candidates = cases[c].candidate_items.size();
      scores.assign(candidates, 0.0f);
      for (size_t i = 0; i < candidates; ++i, ++item_row) {
        const float* item = items.data() + item_row * out_dim;
        float dot = 0;
        for (uint32_t d = 0; d < out_dim; ++d) dot += user[d] * item[d];
        scores[i] = dot;
      }
      const std::vector<uint32_t>& candidate_items = cases[c].candidate_items;
      accumulator.Add(scores, options.eval_k,
                      {candidate_items, dataset.item_train_counts()[candidate_items[0]] > 0});
    }
  }
  return accumulator.result();
}

}  // namespace ember::trainer
