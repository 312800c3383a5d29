// Host entry points to the CUDA backend's ops, one call per op, for tests that check each
// against a plain CPU computation. Each call copies its inputs to the current device, runs the op
// the backend runs (so with the same launch geometry) on the default stream, waits, and copies
// the results back. Plain C++: compiled by the host compiler too; defined only when
// EMBER_HAVE_CUDA is.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"

namespace ember::trainer::cuda {

// input (batch x input_width, in/out): columns [slot_offset, slot_offset + dim) of row b become
// rows[inverse[b]]; batch = inverse.size().
Status RunGatherSlotRows(std::span<const float> rows, std::span<const uint32_t> inverse,
                         uint32_t dim, uint32_t input_width, uint32_t slot_offset,
                         std::vector<float>& input);

// unique_grads (in/out) row inverse[b] += grad_input[b, slot_offset .. slot_offset + dim).
Status RunScatterAddSlotGrads(std::span<const float> grad_input,
                              std::span<const uint32_t> inverse, uint32_t dim,
                              uint32_t input_width, uint32_t slot_offset,
                              std::vector<float>& unique_grads);

// z (rows x bias.size(), in/out) += bias per column, then ReLU when `relu`.
Status RunAddBiasActivate(std::vector<float>& z, std::span<const float> bias, uint32_t rows,
                          bool relu);

// grad (in/out) = 0 where activation <= 0.
Status RunReluBackward(std::vector<float>& grad, std::span<const float> activation);

// u = y / max(|y|, min_norm) per row of `dim`; norms gets the (clamped) norms.
Status RunL2Normalize(std::span<const float> y, uint32_t rows, uint32_t dim, float min_norm,
                      std::vector<float>& u, std::vector<float>& norms);

// dy = (du - u (u . du)) / norm per row.
Status RunL2NormalizeBackward(std::span<const float> u, std::span<const float> norms,
                              std::span<const float> du, uint32_t rows, uint32_t dim,
                              std::vector<float>& dy);

// Softmax cross-entropy over batch x batch logits (in/out: replaced by their gradient of the mean
// loss) with the positives on the diagonal; column_offset (empty: none) is subtracted from every
// row first. row_loss gets each row's loss and *mean_loss their mean.
Status RunSoftmaxCrossEntropy(std::vector<float>& logits, uint32_t batch,
                              std::span<const float> column_offset, std::vector<float>& row_loss,
                              float* mean_loss);

struct AdamSettings {
  float learning_rate = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  uint64_t step = 1;  // 1-based, for the bias correction
};

// One Adam update of weights, first_moment and second_moment (all in/out) from grads.
Status RunAdam(std::vector<float>& weights, std::span<const float> grads,
               std::vector<float>& first_moment, std::vector<float>& second_moment,
               const AdamSettings& settings);

}  // namespace ember::trainer::cuda
