// RowOptimizer: the server-side update rule that applies one gradient to one row.
//
// Optimizer state lives beside the row (the caller allocates dim + state_floats() floats per row
// and passes the two parts separately). Per kind:
//   sgd      no state                      w -= lr * g
//   adagrad  acc[dim]                      acc += g²; w -= lr * g / (sqrt(acc) + eps)
//   adam     m[dim], v[dim], step          bias-corrected Adam (Kingma & Ba), one step count per
//                                          row, so each row gets its own bias correction
//   ftrl     z[dim], n[dim]                FTRL-Proximal (McMahan et al. 2013), alpha = lr
// Adam's step count is stored as a float holding an integer (exact up to 2^24). It stops at 2^24,
// where the bias corrections 1 - beta^t are 1 to float precision for any beta <= 1 - 1e-6.
// Keeping it a real float keeps every state value a meaningful, finite float in checkpoints.
#pragma once

#include <cstdint>
#include <span>

#include "common/status.h"
#include "common/table_spec.h"

namespace ember::embedding {

class RowOptimizer {
 public:
  // InvalidArgument when the spec fails ValidateOptimizerSpec or dim is 0.
  static Result<RowOptimizer> Create(const OptimizerSpec& spec, uint32_t dim);

  const OptimizerSpec& spec() const { return spec_; }
  uint32_t dim() const { return dim_; }
  // Floats of optimizer state per row.
  uint32_t state_floats() const { return state_floats_; }

  // Writes the state of a fresh row (state.size() == state_floats()).
  void InitState(std::span<float> state) const;

  // One update of `row` (dim floats) and its `state` (state_floats() floats) by `grad` (dim
  // floats). The sizes are checked: a mismatch is a caller bug and aborts.
  void Apply(std::span<float> row, std::span<float> state, std::span<const float> grad) const {
    Apply(row, state, grad, spec_.learning_rate);
  }
  // The same update with `learning_rate` (> 0) in place of the spec's (a trainer's schedule).
  void Apply(std::span<float> row, std::span<float> state, std::span<const float> grad,
             float learning_rate) const;

 private:
  RowOptimizer(const OptimizerSpec& spec, uint32_t dim, uint32_t state_floats)
      : spec_(spec), dim_(dim), state_floats_(state_floats) {}

  void ApplySgd(float* row, const float* grad, float lr) const;
  void ApplyAdagrad(float* row, float* state, const float* grad, float lr) const;
  void ApplyAdam(float* row, float* state, const float* grad, float lr) const;
  void ApplyFtrl(float* row, float* state, const float* grad, float lr) const;

  OptimizerSpec spec_;
  uint32_t dim_;
  uint32_t state_floats_;
};

}  // namespace ember::embedding
