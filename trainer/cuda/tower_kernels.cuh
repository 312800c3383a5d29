// Element-wise and per-row kernels of a tower: gathering slot rows into the concatenated input,
// bias + ReLU, L2 normalisation forward and backward, and scatter-adding input gradients back
// into unique-row gradients. Matrix products are cuBLAS calls in cuda_backend.cu. The kernels
// have internal linkage: each .cu that launches them gets its own copy.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "trainer/cuda/launch.cuh"

namespace ember::trainer::cuda {

// input[b, slot_offset + d] = rows[inverse[b], d] for b < batch, d < dim.
static __global__ void GatherSlotRowsKernel(const float* rows, const uint32_t* inverse,
                                            uint32_t batch, uint32_t dim, uint32_t input_width,
                                            uint32_t slot_offset, float* input) {
  const size_t total = size_t{batch} * dim;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total;
       i += size_t{gridDim.x} * blockDim.x) {
    const size_t b = i / dim, d = i % dim;
    input[b * input_width + slot_offset + d] = rows[size_t{inverse[b]} * dim + d];
  }
}

// unique_grads[inverse[b], d] += grad_input[b, slot_offset + d]; unique_grads starts zeroed.
static __global__ void ScatterAddSlotGradsKernel(const float* grad_input,
                                                 const uint32_t* inverse, uint32_t batch,
                                                 uint32_t dim, uint32_t input_width,
                                                 uint32_t slot_offset, float* unique_grads) {
  const size_t total = size_t{batch} * dim;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total;
       i += size_t{gridDim.x} * blockDim.x) {
    const size_t b = i / dim, d = i % dim;
    atomicAdd(&unique_grads[size_t{inverse[b]} * dim + d],
              grad_input[b * input_width + slot_offset + d]);
  }
}

// z[r, c] += bias[c], then max(z, 0) when `relu`.
static __global__ void AddBiasActivateKernel(float* z, const float* bias, uint32_t rows,
                                             uint32_t cols, bool relu) {
  const size_t total = size_t{rows} * cols;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total;
       i += size_t{gridDim.x} * blockDim.x) {
    const float value = z[i] + bias[i % cols];
    z[i] = relu ? fmaxf(value, 0.0f) : value;
  }
}

// grad[i] = 0 where the ReLU output activation[i] was not positive.
static __global__ void ReluBackwardKernel(float* grad, const float* activation, size_t count) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    if (!(activation[i] > 0.0f)) grad[i] = 0.0f;
  }
}

static __global__ void FillKernel(float* data, size_t count, float value) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    data[i] = value;
  }
}

// One warp per row: norms[r] = max(|y_r|, min_norm); u_r = y_r / norms[r].
static __global__ void L2NormalizeKernel(const float* y, uint32_t rows, uint32_t dim,
                                         float min_norm, float* u, float* norms) {
  const size_t warps_per_block = blockDim.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  for (size_t r = blockIdx.x * warps_per_block + threadIdx.x / kWarpSize; r < rows;
       r += size_t{gridDim.x} * warps_per_block) {
    const float* in = y + r * dim;
    float squares = 0;
    for (uint32_t j = lane; j < dim; j += kWarpSize) squares += in[j] * in[j];
    squares = WarpReduce(squares, SumOp{});
    const float norm = fmaxf(sqrtf(squares), min_norm);
    const float inverse_norm = 1.0f / norm;
    for (uint32_t j = lane; j < dim; j += kWarpSize) u[r * dim + j] = in[j] * inverse_norm;
    if (lane == 0) norms[r] = norm;
  }
}

// One warp per row: dy_r = (du_r - u_r (u_r . du_r)) / norms[r].
static __global__ void L2NormalizeBackwardKernel(const float* u, const float* norms,
                                                 const float* du, uint32_t rows, uint32_t dim,
                                                 float* dy) {
  const size_t warps_per_block = blockDim.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  for (size_t r = blockIdx.x * warps_per_block + threadIdx.x / kWarpSize; r < rows;
       r += size_t{gridDim.x} * warps_per_block) {
    const size_t base = r * dim;
    float projection = 0;
    for (uint32_t j = lane; j < dim; j += kWarpSize) projection += u[base + j] * du[base + j];
    projection = WarpReduce(projection, SumOp{});
    const float inverse_norm = 1.0f / norms[r];
    for (uint32_t j = lane; j < dim; j += kWarpSize) {
      dy[base + j] = (du[base + j] - u[base + j] * projection) * inverse_norm;
    }
  }
}

// Blocks for a one-warp-per-row kernel.
inline unsigned RowBlocksFor(size_t rows) {
  constexpr size_t kRowsPerBlock = kThreadsPerBlock / kWarpSize;
  return BlocksFor((rows + kRowsPerBlock - 1) / kRowsPerBlock * kThreadsPerBlock);
}

}  // namespace ember::trainer::cuda
