// The small two-tower model and synthetic data the in-process training tests share: one slot
// per tower, dim-8 rows, one hidden layer, so a step takes milliseconds on the CPU backend.
#pragma once

#include "trainer/model_config.h"
#include "trainer/synthetic_source.h"

namespace ember::testing {

inline trainer::ModelConfig SmallTwoTowerModel() {
  trainer::ModelConfig model;
  model.embedding_dim = 8;
  model.user_slots = 1;
  model.item_slots = 1;
  model.hidden = {16};
  model.output_dim = 8;
  model.temperature = 0.2f;
  model.learning_rate = 0.01f;
  return model;
}

// Clustered Zipf keys over `vocabulary` per slot, from `seed`.
inline trainer::SyntheticOptions SmallSyntheticData(uint64_t vocabulary, uint64_t seed) {
  trainer::SyntheticOptions data;
  data.user_slots = 1;
  data.item_slots = 1;
  data.vocabulary = vocabulary;
  data.num_clusters = 8;
  data.seed = seed;
  return data;
}

}  // namespace ember::testing
