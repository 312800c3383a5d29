// Ranking evaluation of a trained two-tower model on an interaction dataset's held-out cases:
// each case's user is encoded once, its candidates (test item first, then the sampled
// negatives, or the whole catalogue) are encoded by the item tower, and the candidates are
// ranked by dot product.
#pragma once

#include <span>
#include <vector>

#include "ps/client/client.h"
#include "trainer/backend.h"
#include "trainer/interaction_dataset.h"
#include "trainer/model_config.h"
#include "trainer/ranking_metrics.h"
#include "trainer/train_options.h"

namespace ember::trainer {

// HR@k and NDCG@k (k = options.eval_k) over every evaluation case, pulling the rows it needs
// from the cluster (without pushing anything back): against each case's sampled negatives, or
// with options.eval_protocol "full" against every item its user did not train on (Recall@k).
Result<RankingResult> EvaluateRanking(ps::Client& client, Backend& backend,
                                      const InteractionDataset& dataset, const ModelConfig& model,
                                      const TrainOptions& options);
// The same over other cases of the dataset, e.g. its validation_cases(). (In the full protocol
// a validation item also ranks against its user's test item, which is not a training item.)
Result<RankingResult> EvaluateRanking(ps::Client& client, Backend& backend,
                                      const InteractionDataset& dataset,
                                      const std::vector<EvalCase>& cases,
                                      const ModelConfig& model, const TrainOptions& options);

// The same from vectors encoded elsewhere (e.g. by a PyTorch model): user_vectors holds one row of
// `dim` per user of the dataset, item_vectors one per item, and a candidate's score is the dot
// product of its vector with the user's. InvalidArgument when the sizes do not fit the dataset.
Result<RankingResult> EvaluateEncoded(const InteractionDataset& dataset,
                                      const std::vector<EvalCase>& cases,
                                      std::span<const float> user_vectors,
                                      std::span<const float> item_vectors, uint32_t dim,
                                      uint32_t k, bool full_catalogue);

}  // namespace ember::trainer
