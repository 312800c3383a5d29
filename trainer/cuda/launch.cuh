// Launch geometry and block-wide reductions shared by the ops' kernels (device code: include it
// only from the ops' .cu files).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "common/status.h"
#include "trainer/cuda/cuda_status.cuh"

namespace ember::trainer::cuda {

constexpr int kThreadsPerBlock = 256;
constexpr int kWarpSize = 32;
static_assert(
    kThreadsPerBlock % kWarpSize == 0 && kThreadsPerBlock <= 1024,
    "BlockReduce and the one-warp-per-row kernels need whole warps, at most 1024 threads");

// Blocks for a grid-stride loop over `count` elements (capped; the loop covers the rest).
inline unsigned BlocksFor(size_t count) {
  const size_t blocks = (count + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return static_cast<unsigned>(std::clamp<size_t>(blocks, 1, 65535));
}

// The body of every op's Run: checks `op`'s arguments, launches `kernel` with `blocks` blocks of
// kThreadsPerBlock threads on `stream`, and reports the launch error under `kernel_name`.
template <typename Op, typename... Params>
Status CheckAndLaunch(const Op& op, void (*kernel)(Params...), const char* kernel_name,
                      unsigned blocks, cudaStream_t stream, std::type_identity_t<Params>... args) {
  RETURN_IF_ERROR(op.CanImplement());
  kernel<<<blocks, kThreadsPerBlock, 0, stream>>>(args...);
  return LaunchStatus(kernel_name);
}

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

template <typename Op>
__device__ float WarpReduce(float value, Op op) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

// Reduces one value per thread over the block (blockDim.x a multiple of 32, at most 1024);
// every thread gets the result. `scratch` holds 32 floats of shared memory.
template <typename Op>
__device__ float BlockReduce(float value, Op op, float identity, float* scratch) {
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int warps = blockDim.x / kWarpSize;
  value = WarpReduce(value, op);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  value = threadIdx.x < warps ? scratch[threadIdx.x] : identity;
  if (warp == 0) value = WarpReduce(value, op);
  if (threadIdx.x == 0) scratch[0] = value;
  __syncthreads();
  return scratch[0];
}

}  // namespace ember::trainer::cuda
