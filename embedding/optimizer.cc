// RowOptimizer: SGD, Adagrad, Adam and FTRL-Proximal updates over one row.
//
// Each update is a plain loop over the row's coordinates with restrict-qualified pointers, so the
// compiler vectorises it; the choice of rule is made once per row. On x86-64 each loop is also
// built for AVX2 and the CPU picks at load time. AVX2 without FMA keeps every result bit for bit
// equal to the baseline build's: same operations, same rounding, wider registers.
#include "embedding/optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/check.h"
#include "embedding/table_config.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EMBER_WITH_AVX2_CLONE __attribute__((target_clones("avx2", "default")))
#else
#define EMBER_WITH_AVX2_CLONE
#endif

namespace ember::embedding {
namespace {

// Adam's step count saturates here: a float holds every integer up to 2^24 exactly.
constexpr float kMaxAdamStep = 16777216.0f;
// Smallest normal float: keeps FTRL's weight finite (0 / kTinyDenominator) on an untouched row.
constexpr float kTinyDenominator = std::numeric_limits<float>::min();

uint32_t StateFloats(OptimizerKind kind, uint32_t dim) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return 0;
    case OptimizerKind::kAdagrad:
      return dim;
    case OptimizerKind::kAdam:
      return 2 * dim + 1;
    case OptimizerKind::kFtrl:
      return 2 * dim;
  }
  return 0;
}

}  // namespace

Result<RowOptimizer> RowOptimizer::Create(const OptimizerSpec& spec, uint32_t dim) {
  if (dim == 0) return InvalidArgument("optimizer: row dim must be at least 1");
  RETURN_IF_ERROR(ValidateOptimizerSpec(spec));
  return RowOptimizer(spec, dim, StateFloats(spec.kind, dim));
}

void RowOptimizer::InitState(std::span<float> state) const {
  EMBER_CHECK(state.size() == state_floats_, "state has", state.size(), "floats, want",
              state_floats_);
  const float initial = spec_.kind == OptimizerKind::kAdagrad ? spec_.initial_accumulator : 0.0f;
  std::fill(state.begin(), state.end(), initial);
}

void RowOptimizer::Apply(std::span<float> row, std::span<float> state,
                         std::span<const float> grad, float learning_rate) const {
  EMBER_CHECK(row.size() == dim_ && grad.size() == dim_ && state.size() == state_floats_,
              "row", row.size(), "grad", grad.size(), "state", state.size(), "want dim", dim_,
              "state", state_floats_);
  switch (spec_.kind) {
    case OptimizerKind::kSgd:
      ApplySgd(row.data(), grad.data(), learning_rate);
      return;
    case OptimizerKind::kAdagrad:
      ApplyAdagrad(row.data(), state.data(), grad.data(), learning_rate);
      return;
    case OptimizerKind::kAdam:
      ApplyAdam(row.data(), state.data(), grad.data(), learning_rate);
      return;
    case OptimizerKind::kFtrl:
      ApplyFtrl(row.data(), state.data(), grad.data(), learning_rate);
      return;
  }
}

EMBER_WITH_AVX2_CLONE void RowOptimizer::ApplySgd(float* __restrict row, const float* __restrict grad,
                                              float lr) const {
  const float decay = spec_.weight_decay;
  for (uint32_t i = 0; i < dim_; ++i) row[i] -= lr * (grad[i] + decay * row[i]);
}

EMBER_WITH_AVX2_CLONE void RowOptimizer::ApplyAdagrad(float* __restrict row, float* __restrict acc,
                                const float* __restrict grad, float lr) const {
  const float eps = spec_.epsilon;
  const float decay = spec_.weight_decay;
  for (uint32_t i = 0; i < dim_; ++i) {
    const float g = grad[i] + decay * row[i];
    acc[i] += g * g;
    row[i] -= lr * g / (std::sqrt(acc[i]) + eps);
  }
}

EMBER_WITH_AVX2_CLONE void RowOptimizer::ApplyAdam(float* __restrict row, float* __restrict state,
                             const float* __restrict grad, float lr) const {
  float* __restrict m = state;
  float* __restrict v = state + dim_;
  float& step = state[2 * dim_];
  step = std::min(step + 1.0f, kMaxAdamStep);
  // Bias corrections in double: beta^t for small t loses precision in float.
  const double t = step;
  const float m_scale = static_cast<float>(1.0 / (1.0 - std::pow(double{spec_.beta1}, t)));
  const float v_scale = static_cast<float>(1.0 / (1.0 - std::pow(double{spec_.beta2}, t)));
  const float b1 = spec_.beta1;
  const float b2 = spec_.beta2;
  const float eps = spec_.epsilon;
  const float decay = spec_.weight_decay;
  for (uint32_t i = 0; i < dim_; ++i) {
    const float g = grad[i] + decay * row[i];
    m[i] = b1 * m[i] + (1.0f - b1) * g;
    v[i] = b2 * v[i] + (1.0f - b2) * g * g;
    row[i] -= lr * (m[i] * m_scale) / (std::sqrt(v[i] * v_scale) + eps);
  }
}

EMBER_WITH_AVX2_CLONE void RowOptimizer::ApplyFtrl(float* __restrict row, float* __restrict state,
                             const float* __restrict grad, float lr) const {
  float* __restrict z = state;
  float* __restrict n = state + dim_;
  const float inv_alpha = 1.0f / lr;
  const float beta = spec_.ftrl_beta;
  const float l1 = spec_.l1;
  const float l2 = spec_.l2;
  for (uint32_t i = 0; i < dim_; ++i) {
    const float g = grad[i];
    const float sqrt_n_old = std::sqrt(n[i]);
    const float n_new = n[i] + g * g;
    const float sqrt_n_new = std::sqrt(n_new);
    const float sigma = (sqrt_n_new - sqrt_n_old) * inv_alpha;
    z[i] += g - sigma * row[i];
    n[i] = n_new;
    // Soft threshold: 0 when |z| <= l1, else z - sign(z) * l1. Branch-free so it vectorises.
    const float shrunk = std::copysign(std::max(std::fabs(z[i]) - l1, 0.0f), z[i]);
    // The floor only matters when beta, l2 and n are all 0, where shrunk is 0 too.
    const float denominator = std::max((beta + sqrt_n_new) * inv_alpha + l2, kTinyDenominator);
    row[i] = -shrunk / denominator;
  }
}

}  // namespace ember::embedding
