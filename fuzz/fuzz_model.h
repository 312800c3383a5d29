// The small two-tower model whose trainer checkpoints the trainer_checkpoint fuzzer checks and the
// corpus writer writes (fuzz/trainer_checkpoint_fuzzer.cc, fuzz/corpus_writer.cc).
#pragma once

#include "trainer/model_config.h"

namespace ember::fuzz {

inline trainer::ModelConfig FuzzModel() {
  trainer::ModelConfig model;
  model.embedding_dim = 4;
  model.user_slots = 1;
  model.item_slots = 2;
  model.hidden = {3};
  model.output_dim = 2;
  return model;
}

}  // namespace ember::fuzz
