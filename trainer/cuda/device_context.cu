// DeviceContext: creating the stream and the cuBLAS handle, in the order cuBLAS needs.
#include "trainer/cuda/device_context.h"

namespace ember::trainer::cuda {

Status DeviceContext::Init(bool tf32) {
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&device_));
  ASSIGN_OR_RETURN(stream_, CreateStream(cudaStreamNonBlocking));
  ASSIGN_OR_RETURN(cublas_, CreateCublas());
  CUDA_RETURN_IF_ERROR(cublasSetStream(cublas_.get(), stream_.get()));
  CUDA_RETURN_IF_ERROR(
      cublasSetMathMode(cublas_.get(), tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  RETURN_IF_ERROR(workspace_.Reserve(kCublasWorkspaceBytes));
  CUDA_RETURN_IF_ERROR(cublasSetWorkspace(cublas_.get(), workspace_.data(), kCublasWorkspaceBytes));
  return Status::Ok();
}

Status DeviceContext::Activate() const {
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return Status::Ok();
}

}  // namespace ember::trainer::cuda
