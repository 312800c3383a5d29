// Row-major matrix products on cuBLAS, which is column-major: a row-major R x C matrix is, to
// cuBLAS, its C x R transpose with leading dimension C. So a row-major C = op(A) op(B) is the
// column-major C^T = op(B)^T op(A)^T, and RowMajorGemm makes that one cublasSgemm call, with
// every matrix stored densely (leading dimension = stored row length). In the shape of the ops
// (gather_ops.h), but Run takes the cuBLAS handle: the handle is bound to the stream it runs on.
#pragma once

#include <cublas_v2.h>

#include <cstdint>

#include "common/status.h"

namespace ember::trainer::cuda {

// c (m x n) = alpha op(a) op(b) + beta c, where op(a) is m x k (a stored m x k, or k x m when
// transpose_a) and op(b) is k x n (b stored k x n, or n x k when transpose_b).
struct RowMajorGemm {
  uint32_t m = 0, n = 0, k = 0;
  const float* a = nullptr;
  bool transpose_a = false;
  const float* b = nullptr;
  bool transpose_b = false;
  float* c = nullptr;
  float alpha = 1.0f;
  float beta = 0.0f;

  // Every size at least 1 and at most INT_MAX (cuBLAS takes int), pointers set.
  Status CanImplement() const;
  // Enqueued on `handle`'s stream; cuBLAS uses the handle's workspace and math mode.
  Status Run(cublasHandle_t handle) const;
};

// sums (cols) = the column sums of the row-major rows x cols matrix `a`, as one GEMV of a^T with
// a vector of `rows` ones (a fixed order of sums, unlike atomics).
struct ColumnSums {
  uint32_t rows = 0, cols = 0;
  const float* a = nullptr;
  const float* ones = nullptr;  // rows values of 1
  float* sums = nullptr;

  Status CanImplement() const;
  Status Run(cublasHandle_t handle) const;
};

}  // namespace ember::trainer::cuda
