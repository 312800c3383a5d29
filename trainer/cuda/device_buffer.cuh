// Owning arrays in GPU memory and in pinned host memory, grown on demand and reused. Move-only:
// a move hands over the same allocation, so pointers into it (a captured graph's) stay valid.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "common/status.h"
#include "trainer/cuda/cuda_status.cuh"

namespace ember::trainer::cuda {

// kDevice: cudaMalloc'd; kPinned: cudaMallocHost'd (page-locked host memory for async copies).
enum class MemoryKind { kDevice, kPinned };

template <typename T, MemoryKind kKind>
class CudaArray {
 public:
  CudaArray() = default;
  CudaArray(const CudaArray&) = delete;
  CudaArray& operator=(const CudaArray&) = delete;
  CudaArray(CudaArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}
  CudaArray& operator=(CudaArray&& other) noexcept {
    if (this != &other) {
      Free();
      data_ = std::exchange(other.data_, nullptr);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  ~CudaArray() { Free(); }

  // Makes room for at least `count` elements. Growing discards the contents.
  Status Reserve(size_t count) {
    if (count <= capacity_) return Status::Ok();
    Free();
    void* memory = nullptr;
    const size_t bytes = count * sizeof(T);
    if constexpr (kKind == MemoryKind::kDevice) {
      CUDA_RETURN_IF_ERROR(cudaMalloc(&memory, bytes));
    } else {
      CUDA_RETURN_IF_ERROR(cudaMallocHost(&memory, bytes));
    }
    data_ = static_cast<T*>(memory);
    capacity_ = count;
    return Status::Ok();
  }

  T* data() const { return data_; }
  size_t capacity() const { return capacity_; }

 private:
  void Free() {
    if (data_ == nullptr) return;
    // Frees cannot fail in a way the caller could act on; a failure here is an earlier sticky
    // error that the next call reports.
    if constexpr (kKind == MemoryKind::kDevice) {
      (void)cudaFree(data_);
    } else {
      (void)cudaFreeHost(data_);
    }
    data_ = nullptr;
    capacity_ = 0;
  }

  T* data_ = nullptr;
  size_t capacity_ = 0;
};

template <typename T>
using DeviceArray = CudaArray<T, MemoryKind::kDevice>;
template <typename T>
using PinnedArray = CudaArray<T, MemoryKind::kPinned>;

}  // namespace ember::trainer::cuda
