// DenseState: everything a backend needs to continue training its dense towers exactly where it
// stopped: the weights, Adam's two moments (shaped like the weights) and the Adam step count that
// drives the bias correction. Checkpoints carry it; a backend given a DenseState takes its next
// step as if it had never stopped.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "trainer/dense_weights.h"
#include "trainer/model_config.h"

namespace ember::trainer {

struct DenseState {
  DenseWeights weights;
  DenseWeights first_moment;   // Adam's m
  DenseWeights second_moment;  // Adam's v
  uint64_t adam_steps = 0;     // Adam steps taken since the moments were zero
};

// InvalidArgument naming the part (weights, first or second moment) whose shapes do not match
// `config`.
Status CheckDenseStateShape(const ModelConfig& config, const DenseState& state);

}  // namespace ember::trainer
