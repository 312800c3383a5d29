// ModelConfig: the `model:` section of a config, the shape and optimiser of the two-tower model.
//
// Each tower (user, item) concatenates one embedding row per sparse slot, runs it through
// Linear+ReLU hidden layers and a final Linear, and L2-normalises the result. The score of a
// (user, item) pair is their dot product divided by `temperature`. Dense weights train with Adam.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ember::trainer {

struct ModelConfig {
  uint32_t embedding_dim = 64;  // D: width of every sparse slot's embedding row
  uint32_t user_slots = 3, item_slots = 3;
  std::vector<uint32_t> hidden = {256, 128};  // Linear+ReLU layer widths, shared by both towers
  uint32_t output_dim = 64;                   // width of the final Linear, before L2 normalisation
  float temperature = 0.05f;                  // logits are dot(u, i) / temperature
  float learning_rate = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;  // Adam
  uint64_t seed = 1;  // initial dense weights
};

// Reads a `model:` mapping; absent keys keep their defaults, unknown keys are rejected, and every
// error names the offending field ("<path>.<key>: ...").
Result<ModelConfig> ModelConfigFromYaml(const YAML::Node& node, std::string_view path);

// Checks the values make a model: positive sizes, temperature > 0, learning_rate >= 0 (0 freezes
// the dense weights), betas in [0, 1), epsilon > 0.
Status ValidateModelConfig(const ModelConfig& config);

}  // namespace ember::trainer
