// Turns CUDA runtime and cuBLAS error codes into ember Status values (kInternal), so device
// failures travel up like every other error instead of aborting. One check, overloaded for both
// kinds of code, and one macro for both.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "common/status.h"

namespace ember::trainer::cuda {

inline Status CudaStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::Ok();
  return Internal(std::string("CUDA error in ") + what + ": " + cudaGetErrorName(error) + " (" +
                  cudaGetErrorString(error) + ")");
}

inline Status CudaStatus(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Internal(std::string("cuBLAS error in ") + what + ": " + cublasGetStatusName(status) +
                  " (" + cublasGetStatusString(status) + ")");
}

// Reports a failed kernel launch (bad configuration) or an earlier asynchronous failure.
inline Status LaunchStatus(const char* what) { return CudaStatus(cudaGetLastError(), what); }

}  // namespace ember::trainer::cuda

// Returns Internal from the enclosing function when a CUDA runtime or cuBLAS call fails.
#define CUDA_RETURN_IF_ERROR(expr) \
  RETURN_IF_ERROR(::ember::trainer::cuda::CudaStatus((expr), #expr))
