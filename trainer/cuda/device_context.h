// The per-GPU state that the backend's ops run on: the device, one non-blocking stream, and a
// cuBLAS handle bound to that stream with a workspace of its own, so that cuBLAS never allocates
// while a CUDA graph is being captured. Owned by one backend and used from one thread at a time.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "common/status.h"
#include "trainer/cuda/cuda_handles.h"
#include "trainer/cuda/device_buffer.cuh"

namespace ember::trainer::cuda {

class DeviceContext {
 public:
  // cuBLAS workspace, set explicitly so that cuBLAS never allocates while a graph is captured.
  static constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

  DeviceContext() = default;
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  // Takes the calling thread's current device and creates the stream and the cuBLAS handle on
  // it; `tf32` lets cuBLAS round GEMM inputs to TF32 (otherwise full FP32). Call once.
  Status Init(bool tf32);

  // Makes this context's device current on the calling thread.
  Status Activate() const;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_.get(); }
  // Bound to stream(): a GEMM through it is enqueued there. Never rebind it (cublasSetStream
  // also drops the workspace).
  cublasHandle_t cublas() const { return cublas_.get(); }

 private:
  int device_ = 0;
  CudaStream stream_;
  DeviceArray<char> workspace_;
  CublasHandle cublas_;  // released before the workspace it uses
};

}  // namespace ember::trainer::cuda
