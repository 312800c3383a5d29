// Move-only owners of the CUDA runtime and cuBLAS handles the backend holds: stream, event,
// cuBLAS handle, captured graph and graph instance. Each destroys its handle when it goes out of
// scope, so no error path leaks one and no destructor lists them by hand. Host code: compiled by
// nvcc or the host compiler; use from one thread at a time, like the handles themselves.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <utility>

#include "common/status.h"
#include "trainer/cuda/cuda_status.cuh"

namespace ember::trainer::cuda {

// Owns one `Handle` (a pointer-like CUDA or cuBLAS handle, null when empty) and releases it with
// `kDestroy`, which returns a cudaError_t or a cublasStatus_t.
template <typename Handle, auto kDestroy>
class UniqueHandle {
 public:
  UniqueHandle() = default;
  explicit UniqueHandle(Handle handle) : handle_(handle) {}
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      Drop();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~UniqueHandle() { Drop(); }

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }

  // Releases the handle now and reports the release call's error as `what` failing; the
  // destructor and move-assignment drop that error instead.
  Status Reset(const char* what) {
    if (handle_ == nullptr) return Status::Ok();
    return CudaStatus(kDestroy(std::exchange(handle_, nullptr)), what);
  }

 private:
  // A release cannot fail in a way the caller could act on: a failure here is an earlier sticky
  // error, which the next call reports.
  void Drop() {
    if (handle_ != nullptr) (void)kDestroy(std::exchange(handle_, nullptr));
  }

  Handle handle_ = nullptr;
};

using CudaStream = UniqueHandle<cudaStream_t, &cudaStreamDestroy>;
using CudaEvent = UniqueHandle<cudaEvent_t, &cudaEventDestroy>;
using CublasHandle = UniqueHandle<cublasHandle_t, &cublasDestroy>;
using CudaGraph = UniqueHandle<cudaGraph_t, &cudaGraphDestroy>;
using CudaGraphExec = UniqueHandle<cudaGraphExec_t, &cudaGraphExecDestroy>;

// A stream on the current device (cudaStreamCreateWithFlags).
inline Result<CudaStream> CreateStream(unsigned flags) {
  cudaStream_t stream = nullptr;
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, flags));
  return CudaStream(stream);
}

// A timing event on the current device (cudaEventCreate).
inline Result<CudaEvent> CreateEvent() {
  cudaEvent_t event = nullptr;
  CUDA_RETURN_IF_ERROR(cudaEventCreate(&event));
  return CudaEvent(event);
}

// A cuBLAS handle on the current device, bound to the legacy default stream until set otherwise.
inline Result<CublasHandle> CreateCublas() {
  cublasHandle_t handle = nullptr;
  CUDA_RETURN_IF_ERROR(cublasCreate(&handle));
  return CublasHandle(handle);
}

}  // namespace ember::trainer::cuda
