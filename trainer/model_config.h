// ModelConfig: the `model:` section of a config, the shape and optimiser of the two-tower model.
//
// Each tower (user, item) concatenates one embedding row per sparse slot, runs it through
// Linear+ReLU hidden layers and a final Linear, and L2-normalises the result. The score of a
// (user, item) pair is their dot product divided by `temperature`. Dense weights train with Adam.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ember::trainer {

// The training loss. kInBatchSoftmax: each user's item is the positive among all the batch's
// items, and with `negatives` N > 0 also N catalogue items drawn uniformly for the batch and
// shared by all its users (mixed negative sampling, Yang et al., WWW 2020: the batch's items
// are drawn by popularity, so without them the model rarely learns to rank a rare item below
// another; with the logQ correction each column is corrected by how it was drawn). The others
// score each user against its own item and `negatives` items drawn from the
// catalogue: a softmax over those 1 + N (kSampledSoftmax), a binary cross-entropy of each of them
// (kBce: the positive labelled 1, the negatives 0, summed per user), or Bayesian personalised
// ranking (kBpr: -log sigmoid(positive - negative), averaged over the N pairs).
enum class LossKind { kInBatchSoftmax, kSampledSoftmax, kBce, kBpr };
std::string_view LossName(LossKind loss);  // in_batch_softmax, sampled_softmax, bce, bpr

struct ModelConfig {
  uint32_t embedding_dim = 64;  // D: width of every sparse slot's embedding row
  uint32_t user_slots = 3, item_slots = 3;
  std::vector<uint32_t> hidden = {256, 128};  // Linear+ReLU layer widths, shared by both towers
  uint32_t output_dim = 64;                   // width of the final Linear, before L2 normalisation
  float temperature = 0.05f;                  // logits are dot(u, i) / temperature
  LossKind loss = LossKind::kInBatchSoftmax;
  uint32_t negatives = 0;  // sampled negatives: per positive, or (in-batch softmax) per batch
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

// Whether the batch's users share its sampled negatives (the in-batch softmax with negatives).
inline bool SharesNegatives(const ModelConfig& config) {
  return config.loss == LossKind::kInBatchSoftmax && config.negatives > 0;
}

// Item-tower samples of a training batch of `batch_size` positives: the positives, then each
// positive's `negatives` in order (sample batch_size + b * negatives + n is positive b's n-th),
// or with shared negatives the batch's `negatives`.
inline uint32_t ItemSamples(const ModelConfig& config, uint32_t batch_size) {
  if (SharesNegatives(config)) return batch_size + config.negatives;
  return batch_size * (1 + config.negatives);
}

// Reads a `model:` mapping; absent keys keep their defaults, unknown keys are rejected, and every
// error names the offending field ("<path>.<key>: ...").
Result<ModelConfig> ModelConfigFromYaml(const YAML::Node& node, std::string_view path);

// Checks the values make a model: positive sizes, temperature > 0, learning_rate >= 0 (0 freezes
// the dense weights), betas in [0, 1), epsilon > 0, and negatives > 0 for the sampled losses
// (optional with the in-batch softmax).
Status ValidateModelConfig(const ModelConfig& config);

}  // namespace ember::trainer
