// Ranking evaluation of a trained two-tower model on an interaction dataset's held-out cases:
// each case's user is encoded once, its candidates (test item first, then the sampled
// negatives, or the whole catalogue) are encoded by the item tower, and the candidates are
// ranked by dot product.
#pragma once

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

}  // namespace ember::trainer
