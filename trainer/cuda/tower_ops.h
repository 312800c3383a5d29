// The element-wise and per-row ops of a tower (the matrix products are cuBLAS GEMMs, gemm.h):
// bias + ReLU forward, ReLU backward, L2 normalisation forward and backward, and filling an
// array with one value. Ops in the shape gather_ops.h describes; kernels in tower_ops.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace ember::trainer::cuda {

// z[r, c] += bias[c], then max(z, 0) when `relu`; z is rows x cols, row-major.
struct AddBiasActivate {
  float* z = nullptr;
  const float* bias = nullptr;  // cols
  uint32_t rows = 0;
  uint32_t cols = 0;
  bool relu = false;

  Status CanImplement() const;
  Status Run(cudaStream_t stream) const;
};

// grad[i] = 0 where the ReLU output activation[i] was not positive, for i < count.
struct ReluBackward {
  float* grad = nullptr;
  const float* activation = nullptr;
  size_t count = 0;

  Status CanImplement() const;
  Status Run(cudaStream_t stream) const;
};

// Per row r of y (rows x dim): norms[r] = max(|y_r|, min_norm) and u_r = y_r / norms[r]. One
// warp per row.
struct L2Normalize {
  const float* y = nullptr;
  uint32_t rows = 0;
  uint32_t dim = 0;
  float min_norm = 0;      // so a zero row does not divide by zero
  float* u = nullptr;      // rows x dim
  float* norms = nullptr;  // rows

  Status CanImplement() const;
  Status Run(cudaStream_t stream) const;
};

// The gradient through L2Normalize: per row, dy_r = (du_r - u_r (u_r . du_r)) / norms[r]. One warp
// per row.
struct L2NormalizeBackward {
  const float* u = nullptr;      // rows x dim, L2Normalize's output
  const float* norms = nullptr;  // rows, L2Normalize's norms
  const float* du = nullptr;     // rows x dim
  uint32_t rows = 0;
  uint32_t dim = 0;
  float* dy = nullptr;  // rows x dim

  Status CanImplement() const;
  Status Run(cudaStream_t stream) const;
};

// data[i] = value for i < count.
struct Fill {
  float* data = nullptr;
  size_t count = 0;
  float value = 0;

  Status CanImplement() const;
  Status Run(cudaStream_t stream) const;
};

}  // namespace ember::trainer::cuda
