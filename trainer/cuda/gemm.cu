// The cuBLAS calls behind gemm.h: argument checks and the row-major to column-major mapping.
#include "trainer/cuda/gemm.h"

#include <climits>

#include "trainer/cuda/cuda_status.cuh"
#include "trainer/cuda/op_checks.h"

namespace ember::trainer::cuda {
namespace {

constexpr uint64_t kMaxDimension = INT_MAX;

OpChecks& CheckDimension(OpChecks& checks, uint32_t value, const char* name) {
  return checks.NonZero(value, name).AtMost(value, kMaxDimension, name);
}

cublasOperation_t Operation(bool transpose) { return transpose ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

Status RowMajorGemm::CanImplement() const {
  OpChecks checks("RowMajorGemm");
  CheckDimension(checks, m, "m");
  CheckDimension(checks, n, "n");
  CheckDimension(checks, k, "k");
  return checks.Pointers(a, "a", b, "b", c, "c").status();
}

Status RowMajorGemm::Run(cublasHandle_t handle) const {
  RETURN_IF_ERROR(CanImplement());
  const int rows = static_cast<int>(m), cols = static_cast<int>(n), inner = static_cast<int>(k);
  // Row lengths as stored: a is m x k (k x m transposed), b is k x n (n x k), c is m x n.
  const int lda = transpose_a ? rows : inner;
  const int ldb = transpose_b ? inner : cols;
  // Column-major C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m).
  CUDA_RETURN_IF_ERROR(cublasSgemm(handle, Operation(transpose_b), Operation(transpose_a), cols,
                                   rows, inner, &alpha, b, ldb, a, lda, &beta, c, cols));
  return Status::Ok();
}

Status ColumnSums::CanImplement() const {
  OpChecks checks("ColumnSums");
  CheckDimension(checks, rows, "rows");
  CheckDimension(checks, cols, "cols");
  return checks.Pointers(a, "a", ones, "ones", sums, "sums").status();
}

Status ColumnSums::Run(cublasHandle_t handle) const {
  RETURN_IF_ERROR(CanImplement());
  const float one = 1.0f, zero = 0.0f;
  // To cuBLAS, `a` is the cols x rows matrix a^T: sums = a^T ones.
  CUDA_RETURN_IF_ERROR(cublasSgemv(handle, CUBLAS_OP_N, static_cast<int>(cols),
                                   static_cast<int>(rows), &one, a, static_cast<int>(cols), ones, 1,
                                   &zero, sums, 1));
  return Status::Ok();
}

}  // namespace ember::trainer::cuda
