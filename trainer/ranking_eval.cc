// Ranking evaluation implementation.
#include "trainer/ranking_eval.h"

#include <algorithm>

#include "trainer/tower_batch.h"

namespace ember::trainer {
namespace {

// Encodes `keys[slot][sample]` with one tower; out is samples x output_dim.
Status EncodeTower(ps::Client& client, Backend& backend, Tower tower,
                   const std::vector<std::vector<uint64_t>>& keys,
                   const std::vector<std::string>& tables, const ModelConfig& model,
                   std::vector<float>* out) {
  const uint32_t samples = static_cast<uint32_t>(keys.front().size());
  TowerBatch batch;
  batch.Prepare(keys, model.embedding_dim);
  std::vector<ps::Ticket> pulls;
  batch.StartPull(client, tables, &pulls);
  RETURN_IF_ERROR(WaitAll(pulls).WithContext("evaluation pull"));
  out->resize(size_t{samples} * model.output_dim);
  return backend.Encode(tower, samples, batch.Input(), *out);
}

}  // namespace

Result<RankingResult> EvaluateRanking(ps::Client& client, Backend& backend,
                                      const InteractionDataset& dataset, const ModelConfig& model,
                                      const TrainOptions& options) {
  const std::vector<EvalCase>& cases = dataset.eval_cases();
  const uint32_t out_dim = model.output_dim;
  RankingAccumulator accumulator;
  std::vector<float> users, items, scores;
  for (size_t first = 0; first < cases.size(); first += options.eval_batch_users) {
    const size_t last = std::min(cases.size(), first + options.eval_batch_users);
    std::vector<std::vector<uint64_t>> user_keys(dataset.user_slots());
    std::vector<std::vector<uint64_t>> item_keys(dataset.item_slots());
    for (size_t c = first; c < last; ++c) {
      for (uint32_t s = 0; s < dataset.user_slots(); ++s) {
        user_keys[s].push_back(cases[c].user_keys[s]);
      }
      for (const auto& candidate : cases[c].candidate_item_keys) {
        for (uint32_t s = 0; s < dataset.item_slots(); ++s) item_keys[s].push_back(candidate[s]);
      }
    }
    RETURN_IF_ERROR(EncodeTower(client, backend, Tower::kUser, user_keys, options.user_tables,
                                model, &users));
    RETURN_IF_ERROR(EncodeTower(client, backend, Tower::kItem, item_keys, options.item_tables,
                                model, &items));
    size_t item_row = 0;
    for (size_t c = first; c < last; ++c) {
      const float* user = users.data() + (c - first) * out_dim;
      const size_t candidates = cases[c].candidate_item_keys.size();
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
