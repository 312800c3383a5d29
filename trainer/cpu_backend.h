// The CPU backend: the two-tower model on host memory, with OpenBLAS for every matrix product.
#pragma once

#include <memory>

#include "trainer/backend.h"
#include "trainer/dense_weights.h"
#include "trainer/model_config.h"

namespace ember::trainer {

// `config` must be valid (ValidateModelConfig) and `initial` shaped for it
// (CheckDenseWeightsShape); both are checked with EMBER_CHECK.
std::unique_ptr<Backend> MakeCpuBackend(const ModelConfig& config, DenseWeights initial);

}  // namespace ember::trainer
