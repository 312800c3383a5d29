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
  // CUDA backend only (the CPU backend ignores both).
  // tf32: run the cuBLAS matrix products on TF32 tensor cores (10-bit mantissa inputs, FP32
  // accumulation) instead of exact FP32. Faster on Ampere and later; the loss and unique-row
  // gradients then differ from FP32 (measured on an H100, default model, B=1024, one step: loss
  // 6e-6 relative, unique-row gradients 2.4e-2 relative; the CUDA backend test prints it), which
  // training tolerates but close comparisons with the CPU backend do not. Measured speed-up on
  // the dense step: about 10%.
  bool tf32 = false;
  // cuda_graphs: once the batch size repeats, capture the dense part of a training step into a
  // CUDA graph and replay it, which removes most per-kernel launch overhead. Off: plain launches.
  bool cuda_graphs = true;
};

// Reads a `model:` mapping; absent keys keep their defaults, unknown keys are rejected, and every
// error names the offending field ("<path>.<key>: ...").
Result<ModelConfig> ModelConfigFromYaml(const YAML::Node& node, std::string_view path);

// Checks the values make a model: positive sizes, temperature > 0, learning_rate >= 0 (0 freezes
// the dense weights), betas in [0, 1), epsilon > 0.
Status ValidateModelConfig(const ModelConfig& config);

}  // namespace ember::trainer
