// DenseWeights: the Linear layers of both towers, as plain host arrays.
//
// This is the backend-neutral form of the dense model: backends start from it, export it, and
// two backends given the same DenseWeights compute the same function.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "trainer/model_config.h"

namespace ember::trainer {

enum class Tower { kUser = 0, kItem = 1 };

struct LinearWeights {
  uint32_t in = 0, out = 0;
  std::vector<float> weight;  // out x in, row-major: y = weight * x + bias
  std::vector<float> bias;    // out
};

struct DenseWeights {
  std::vector<LinearWeights> user, item;  // input layer first; the last one produces output_dim

  std::vector<LinearWeights>& tower(Tower t) { return t == Tower::kUser ? user : item; }
  const std::vector<LinearWeights>& tower(Tower t) const { return t == Tower::kUser ? user : item; }
};

// Layer widths of one tower from input to output: {slots * embedding_dim, hidden..., output_dim}.
std::vector<uint32_t> TowerWidths(const ModelConfig& config, Tower tower);

// Fresh weights, a deterministic function of config.seed (and the shapes). Like PyTorch's Linear:
// every weight and bias is drawn from U(-1/sqrt(in), 1/sqrt(in)).
DenseWeights InitDenseWeights(const ModelConfig& config);

// InvalidArgument unless `weights` has exactly the layer shapes `config` describes.
Status CheckDenseWeightsShape(const ModelConfig& config, const DenseWeights& weights);

}  // namespace ember::trainer
