// The ops of tower_ops.h: their kernels, argument checks and launches.
#include "trainer/cuda/tower_ops.h"

#include "trainer/cuda/launch.cuh"
#include "trainer/cuda/op_checks.h"

namespace ember::trainer::cuda {
namespace {

// z[r, c] += bias[c], then max(z, 0) when `relu`.
__global__ void AddBiasActivateKernel(float* z, const float* bias, uint32_t rows, uint32_t cols,
                                      bool relu) {
  const size_t total = size_t{rows} * cols;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total;
       i += size_t{gridDim.x} * blockDim.x) {
    const float value = z[i] + bias[i % cols];
    z[i] = relu ? fmaxf(value, 0.0f) : value;
  }
}

// grad[i] = 0 where the ReLU output activation[i] was not positive.
__global__ void ReluBackwardKernel(float* grad, const float* activation, size_t count) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    if (!(activation[i] > 0.0f)) grad[i] = 0.0f;
  }
}

__global__ void FillKernel(float* data, size_t count, float value) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    data[i] = value;
  }
}

// One warp per row: norms[r] = max(|y_r|, min_norm); u_r = y_r / norms[r].
__global__ void L2NormalizeKernel(const float* y, uint32_t rows, uint32_t dim, float min_norm,
                                  float* u, float* norms) {
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
__global__ void L2NormalizeBackwardKernel(const float* u, const float* norms, const float* du,
                                          uint32_t rows, uint32_t dim, float* dy) {
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
unsigned RowBlocksFor(size_t rows) {
  constexpr size_t kRowsPerBlock = kThreadsPerBlock / kWarpSize;
  return BlocksFor((rows + kRowsPerBlock - 1) / kRowsPerBlock * kThreadsPerBlock);
}

}  // namespace

Status AddBiasActivate::CanImplement() const {
  return OpChecks("AddBiasActivate").Pointers(z, "z", bias, "bias").NonZero(cols, "cols").status();
}

Status AddBiasActivate::Run(cudaStream_t stream) const {
  return CheckAndLaunch(*this, AddBiasActivateKernel, "AddBiasActivateKernel",
                        BlocksFor(size_t{rows} * cols), stream, z, bias, rows, cols, relu);
}

Status ReluBackward::CanImplement() const {
  return OpChecks("ReluBackward").Pointers(grad, "grad", activation, "activation").status();
}

Status ReluBackward::Run(cudaStream_t stream) const {
  return CheckAndLaunch(*this, ReluBackwardKernel, "ReluBackwardKernel", BlocksFor(count), stream,
                        grad, activation, count);
}

Status L2Normalize::CanImplement() const {
  return OpChecks("L2Normalize")
      .Pointers(y, "y", u, "u", norms, "norms")
      .NonZero(dim, "dim")
      .status();
}

Status L2Normalize::Run(cudaStream_t stream) const {
  return CheckAndLaunch(*this, L2NormalizeKernel, "L2NormalizeKernel", RowBlocksFor(rows), stream,
                        y, rows, dim, min_norm, u, norms);
}

Status L2NormalizeBackward::CanImplement() const {
  return OpChecks("L2NormalizeBackward")
      .Pointers(u, "u", norms, "norms", du, "du", dy, "dy")
      .NonZero(dim, "dim")
      .status();
}

Status L2NormalizeBackward::Run(cudaStream_t stream) const {
  return CheckAndLaunch(*this, L2NormalizeBackwardKernel, "L2NormalizeBackwardKernel",
                        RowBlocksFor(rows), stream, u, norms, du, rows, dim, dy);
}

Status Fill::CanImplement() const { return OpChecks("Fill").Pointer(data, "data").status(); }

Status Fill::Run(cudaStream_t stream) const {
  return CheckAndLaunch(*this, FillKernel, "FillKernel", BlocksFor(count), stream, data, count,
                        value);
}

}  // namespace ember::trainer::cuda
