// The host entry points of kernel_ops.h: upload, launch on the default stream, download.
#include <cuda_runtime.h>

#include <vector>

#include "trainer/cuda/adam_kernel.cuh"
#include "trainer/cuda/cuda_status.cuh"
#include "trainer/cuda/device_buffer.cuh"
#include "trainer/cuda/kernel_ops.h"
#include "trainer/cuda/launch.cuh"
#include "trainer/cuda/loss_kernels.cuh"
#include "trainer/cuda/tower_kernels.cuh"

namespace ember::trainer::cuda {
namespace {

// A device copy of a host array (at least one element, so empty inputs still get a pointer).
template <typename T>
class DeviceCopy {
 public:
  Status Upload(std::span<const T> host) {
    count_ = host.size();
    RETURN_IF_ERROR(array_.Reserve(count_ == 0 ? 1 : count_));
    CUDA_RETURN_IF_ERROR(
        cudaMemcpy(array_.data(), host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice));
    return Status::Ok();
  }
  Status Allocate(size_t count) {
    count_ = count;
    return array_.Reserve(count == 0 ? 1 : count);
  }
  Status Download(std::vector<T>& host) const {
    host.resize(count_);
    CUDA_RETURN_IF_ERROR(
        cudaMemcpy(host.data(), array_.data(), count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return Status::Ok();
  }
  T* data() const { return array_.data(); }

 private:
  DeviceArray<T> array_;
  size_t count_ = 0;
};

// Waits for the launched kernel and reports its launch or execution error.
Status Finish(const char* what) {
  RETURN_IF_ERROR(LaunchStatus(what));
  return CudaStatus(cudaDeviceSynchronize(), what);
}

}  // namespace

Status RunGatherSlotRows(std::span<const float> rows, std::span<const uint32_t> inverse,
                         uint32_t dim, uint32_t input_width, uint32_t slot_offset,
                         std::vector<float>& input) {
  DeviceCopy<float> rows_d, input_d;
  DeviceCopy<uint32_t> inverse_d;
  RETURN_IF_ERROR(rows_d.Upload(rows));
  RETURN_IF_ERROR(inverse_d.Upload(inverse));
  RETURN_IF_ERROR(input_d.Upload(input));
  const auto batch = static_cast<uint32_t>(inverse.size());
  GatherSlotRowsKernel<<<BlocksFor(size_t{batch} * dim), kThreadsPerBlock>>>(
      rows_d.data(), inverse_d.data(), batch, dim, input_width, slot_offset, input_d.data());
  RETURN_IF_ERROR(Finish("GatherSlotRowsKernel"));
  return input_d.Download(input);
}

Status RunScatterAddSlotGrads(std::span<const float> grad_input,
                              std::span<const uint32_t> inverse, uint32_t dim,
                              uint32_t input_width, uint32_t slot_offset,
                              std::vector<float>& unique_grads) {
  DeviceCopy<float> grad_d, unique_d;
  DeviceCopy<uint32_t> inverse_d;
  RETURN_IF_ERROR(grad_d.Upload(grad_input));
  RETURN_IF_ERROR(inverse_d.Upload(inverse));
  RETURN_IF_ERROR(unique_d.Upload(unique_grads));
  const auto batch = static_cast<uint32_t>(inverse.size());
  ScatterAddSlotGradsKernel<<<BlocksFor(size_t{batch} * dim), kThreadsPerBlock>>>(
      grad_d.data(), inverse_d.data(), batch, dim, input_width, slot_offset, unique_d.data());
  RETURN_IF_ERROR(Finish("ScatterAddSlotGradsKernel"));
  return unique_d.Download(unique_grads);
}

Status RunAddBiasActivate(std::vector<float>& z, std::span<const float> bias, uint32_t rows,
                          bool relu) {
  DeviceCopy<float> z_d, bias_d;
  RETURN_IF_ERROR(z_d.Upload(z));
  RETURN_IF_ERROR(bias_d.Upload(bias));
  const auto cols = static_cast<uint32_t>(bias.size());
  AddBiasActivateKernel<<<BlocksFor(size_t{rows} * cols), kThreadsPerBlock>>>(
      z_d.data(), bias_d.data(), rows, cols, relu);
  RETURN_IF_ERROR(Finish("AddBiasActivateKernel"));
  return z_d.Download(z);
}

Status RunReluBackward(std::vector<float>& grad, std::span<const float> activation) {
  DeviceCopy<float> grad_d, activation_d;
  RETURN_IF_ERROR(grad_d.Upload(grad));
  RETURN_IF_ERROR(activation_d.Upload(activation));
  ReluBackwardKernel<<<BlocksFor(grad.size()), kThreadsPerBlock>>>(grad_d.data(),
                                                                   activation_d.data(),
                                                                   grad.size());
  RETURN_IF_ERROR(Finish("ReluBackwardKernel"));
  return grad_d.Download(grad);
}

Status RunL2Normalize(std::span<const float> y, uint32_t rows, uint32_t dim, float min_norm,
                      std::vector<float>& u, std::vector<float>& norms) {
  DeviceCopy<float> y_d, u_d, norms_d;
  RETURN_IF_ERROR(y_d.Upload(y));
  RETURN_IF_ERROR(u_d.Allocate(size_t{rows} * dim));
  RETURN_IF_ERROR(norms_d.Allocate(rows));
  L2NormalizeKernel<<<RowBlocksFor(rows), kThreadsPerBlock>>>(y_d.data(), rows, dim, min_norm,
                                                              u_d.data(), norms_d.data());
  RETURN_IF_ERROR(Finish("L2NormalizeKernel"));
  RETURN_IF_ERROR(u_d.Download(u));
  return norms_d.Download(norms);
}

Status RunL2NormalizeBackward(std::span<const float> u, std::span<const float> norms,
                              std::span<const float> du, uint32_t rows, uint32_t dim,
                              std::vector<float>& dy) {
  DeviceCopy<float> u_d, norms_d, du_d, dy_d;
  RETURN_IF_ERROR(u_d.Upload(u));
  RETURN_IF_ERROR(norms_d.Upload(norms));
  RETURN_IF_ERROR(du_d.Upload(du));
  RETURN_IF_ERROR(dy_d.Allocate(size_t{rows} * dim));
  L2NormalizeBackwardKernel<<<RowBlocksFor(rows), kThreadsPerBlock>>>(
      u_d.data(), norms_d.data(), du_d.data(), rows, dim, dy_d.data());
  RETURN_IF_ERROR(Finish("L2NormalizeBackwardKernel"));
  return dy_d.Download(dy);
}

Status RunSoftmaxCrossEntropy(std::vector<float>& logits, uint32_t batch,
                              std::span<const float> column_offset, std::vector<float>& row_loss,
                              float* mean_loss) {
  DeviceCopy<float> logits_d, offset_d, row_loss_d, mean_d;
  RETURN_IF_ERROR(logits_d.Upload(logits));
  RETURN_IF_ERROR(offset_d.Upload(column_offset));
  RETURN_IF_ERROR(row_loss_d.Allocate(batch));
  RETURN_IF_ERROR(mean_d.Allocate(1));
  SoftmaxCrossEntropyKernel<<<SoftmaxBlocksFor(batch), kThreadsPerBlock>>>(
      logits_d.data(), batch, column_offset.empty() ? nullptr : offset_d.data(),
      row_loss_d.data());
  RETURN_IF_ERROR(LaunchStatus("SoftmaxCrossEntropyKernel"));
  MeanKernel<<<1, kThreadsPerBlock>>>(row_loss_d.data(), batch, mean_d.data());
  RETURN_IF_ERROR(Finish("MeanKernel"));
  RETURN_IF_ERROR(logits_d.Download(logits));
  RETURN_IF_ERROR(row_loss_d.Download(row_loss));
  std::vector<float> mean;
  RETURN_IF_ERROR(mean_d.Download(mean));
  *mean_loss = mean[0];
  return Status::Ok();
}

Status RunAdam(std::vector<float>& weights, std::span<const float> grads,
               std::vector<float>& first_moment, std::vector<float>& second_moment,
               const AdamSettings& settings) {
  DeviceCopy<float> weights_d, grads_d, first_d, second_d;
  DeviceCopy<AdamStep> step_d;
  RETURN_IF_ERROR(weights_d.Upload(weights));
  RETURN_IF_ERROR(grads_d.Upload(grads));
  RETURN_IF_ERROR(first_d.Upload(first_moment));
  RETURN_IF_ERROR(second_d.Upload(second_moment));
  const AdamStep step = MakeAdamStep(settings.learning_rate, settings.beta1, settings.beta2,
                                     settings.epsilon, settings.step);
  RETURN_IF_ERROR(step_d.Upload(std::span<const AdamStep>(&step, 1)));
  AdamKernel<<<BlocksFor(weights.size()), kThreadsPerBlock>>>(
      weights_d.data(), grads_d.data(), first_d.data(), second_d.data(), weights.size(),
      step_d.data());
  RETURN_IF_ERROR(Finish("AdamKernel"));
  RETURN_IF_ERROR(weights_d.Download(weights));
  RETURN_IF_ERROR(first_d.Download(first_moment));
  return second_d.Download(second_moment);
}

}  // namespace ember::trainer::cuda
