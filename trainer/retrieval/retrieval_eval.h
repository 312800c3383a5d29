// How well and how fast a Recommender retrieves: over the dataset's held-out cases (each a user
// and the item it went on to take), the approximate search's recall@k against the exact search,
// the full-catalogue Recall@k of the served recommendations (the test item among the top k, items
// the user trained on left out) beside the trainer's own full-catalogue evaluation of the same
// vectors, and the latency of whole queries (encoding the user from its rows, then the search).
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "trainer/retrieval/recommender.h"

namespace ember::trainer {

struct RetrievalQuality {
  size_t cases = 0;
  double ann_recall = 0;       // |approximate top k ∩ exact top k| / k, averaged over the cases
  double served_recall = 0;    // the test item in the approximate top k
  double exact_recall = 0;     // the test item in the exact top k
  double trainer_recall = 0;   // the trainer's full-catalogue Recall@k of the same vectors
};

struct RetrievalSpeed {
  size_t queries = 0;
  double queries_per_second = 0;  // one query at a time, on one thread
  double p50_ms = 0, p99_ms = 0;  // whole queries: the user's rows, its tower, the search
  double search_p50_ms = 0, search_p99_ms = 0;  // the index search alone
};

Result<RetrievalQuality> EvaluateRetrievalQuality(Recommender& recommender, uint32_t k);
// Times up to `queries` queries (the held-out cases' users, in turn).
Result<RetrievalSpeed> MeasureRetrievalSpeed(Recommender& recommender, uint32_t k,
                                             size_t queries);

}  // namespace ember::trainer
