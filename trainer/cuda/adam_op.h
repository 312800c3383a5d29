// The fused Adam update over one flat parameter array (all dense weights of both towers), and
// the per-step constants it reads. An op in the shape gather_ops.h describes; kernel in
// adam_op.cu.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace ember::trainer::cuda {

// Per-step constants, computed on the host in double precision. The kernel reads them from
// device memory, so a captured CUDA graph replays with each step's own values.
struct AdamStep {
  float beta1, beta2, epsilon;
  float step_size;           // learning_rate / (1 - beta1^t)
  float inverse_sqrt_bias2;  // 1 / sqrt(1 - beta2^t)
};

// The constants of Adam step `step` (1-based) for the given hyper-parameters.
inline AdamStep MakeAdamStep(float learning_rate, float beta1, float beta2, float epsilon,
                             uint64_t step) {
  const double bias1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step));
  const double bias2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step));
  AdamStep constants;
  constants.beta1 = beta1;
  constants.beta2 = beta2;
  constants.epsilon = epsilon;
  constants.step_size = static_cast<float>(learning_rate / bias1);
  constants.inverse_sqrt_bias2 = static_cast<float>(1.0 / std::sqrt(bias2));
  return constants;
}

// For i < count: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// w -= step_size * m / (sqrt(v) / sqrt(1 - b2^t) + eps), with the constants read from `step`.
struct Adam {
  float* weights = nullptr;
  const float* grads = nullptr;
  float* first_moment = nullptr;
  float* second_moment = nullptr;
  size_t count = 0;
  const AdamStep* step = nullptr;  // device memory, read when the kernel runs

  Status CanImplement() const;
  Status Run(cudaStream_t stream) const;
};

}  // namespace ember::trainer::cuda
