// Fused Adam update over one flat parameter array (all dense weights of both towers).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

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

// m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  w -= step_size * m / (sqrt(v)/sqrt(bc2) + eps).
static __global__ void AdamKernel(float* weights, const float* grads, float* first_moment,
                                  float* second_moment, size_t count, const AdamStep* step_in) {
  const AdamStep step = *step_in;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    const float g = grads[i];
    const float m = step.beta1 * first_moment[i] + (1.0f - step.beta1) * g;
    const float v = step.beta2 * second_moment[i] + (1.0f - step.beta2) * g * g;
    first_moment[i] = m;
    second_moment[i] = v;
    weights[i] -= step.step_size * m / (sqrtf(v) * step.inverse_sqrt_bias2 + step.epsilon);
  }
}

}  // namespace ember::trainer::cuda
