// The Adam op of adam_op.h: its kernel, argument checks and launch.
#include "trainer/cuda/adam_op.h"

#include "trainer/cuda/launch.cuh"
#include "trainer/cuda/op_checks.h"

namespace ember::trainer::cuda {
namespace {

// m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  w -= step_size * m / (sqrt(v)/sqrt(bc2) + eps).
__global__ void AdamKernel(float* weights, const float* grads, float* first_moment,
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

}  // namespace

Status Adam::CanImplement() const {
  return OpChecks("Adam")
      .Pointers(weights, "weights", grads, "grads", first_moment, "first_moment", second_moment,
                "second_moment", step, "step")
      .status();
}

Status Adam::Run(cudaStream_t stream) const {
  return CheckAndLaunch(*this, AdamKernel, "AdamKernel", BlocksFor(count), stream, weights, grads,
                        first_moment, second_moment, count, step);
}

}  // namespace ember::trainer::cuda
