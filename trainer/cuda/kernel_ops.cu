// The host entry points of kernel_ops.h: stage the inputs on the device, run the backend's op on
// the default stream, wait, and copy the results back. The launches themselves are the ops'.
#include "trainer/cuda/kernel_ops.h"

#include <cuda_runtime.h>

#include <vector>

#include "trainer/cuda/adam_op.h"
#include "trainer/cuda/cuda_status.cuh"
#include "trainer/cuda/device_buffer.cuh"
#include "trainer/cuda/gather_ops.h"
#include "trainer/cuda/loss_ops.h"
#include "trainer/cuda/tower_ops.h"

namespace ember::trainer::cuda {
namespace {

constexpr cudaStream_t kDefaultStream = nullptr;

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

// Runs `op` on the default stream and waits for it, reporting its launch or execution error.
template <typename Op>
Status RunAndWait(const Op& op, const char* what) {
  RETURN_IF_ERROR(op.Run(kDefaultStream));
  return CudaStatus(cudaDeviceSynchronize(), what);
}

// Gather and scatter-add alike: `source` and the inverse indices go up, `target` goes up, is
// updated in place by the op and comes back.
template <typename SlotOp>
Status RunSlotOp(std::span<const float> source, std::span<const uint32_t> inverse, uint32_t dim,
                 uint32_t input_width, uint32_t slot_offset, std::vector<float>& target,
                 const char* what) {
  DeviceCopy<float> source_d, target_d;
  DeviceCopy<uint32_t> inverse_d;
  RETURN_IF_ERROR(source_d.Upload(source));
  RETURN_IF_ERROR(inverse_d.Upload(inverse));
  RETURN_IF_ERROR(target_d.Upload(target));
  const SlotColumns slot{inverse_d.data(), static_cast<uint32_t>(inverse.size()), dim, input_width,
                         slot_offset};
  RETURN_IF_ERROR(RunAndWait(SlotOp{slot, source_d.data(), target_d.data()}, what));
  return target_d.Download(target);
}

}  // namespace

Status RunGatherSlotRows(std::span<const float> rows, std::span<const uint32_t> inverse,
                         uint32_t dim, uint32_t input_width, uint32_t slot_offset,
                         std::vector<float>& input) {
  return RunSlotOp<GatherSlotRows>(rows, inverse, dim, input_width, slot_offset, input,
                                   "GatherSlotRows");
}

Status RunScatterAddSlotGrads(std::span<const float> grad_input, std::span<const uint32_t> inverse,
                              uint32_t dim, uint32_t input_width, uint32_t slot_offset,
                              std::vector<float>& unique_grads) {
  return RunSlotOp<ScatterAddSlotGrads>(grad_input, inverse, dim, input_width, slot_offset,
                                        unique_grads, "ScatterAddSlotGrads");
}

Status RunAddBiasActivate(std::vector<float>& z, std::span<const float> bias, uint32_t rows,
                          bool relu) {
  DeviceCopy<float> z_d, bias_d;
  RETURN_IF_ERROR(z_d.Upload(z));
  RETURN_IF_ERROR(bias_d.Upload(bias));
  const auto cols = static_cast<uint32_t>(bias.size());
  RETURN_IF_ERROR(
      RunAndWait(AddBiasActivate{z_d.data(), bias_d.data(), rows, cols, relu}, "AddBiasActivate"));
  return z_d.Download(z);
}

Status RunReluBackward(std::vector<float>& grad, std::span<const float> activation) {
  DeviceCopy<float> grad_d, activation_d;
  RETURN_IF_ERROR(grad_d.Upload(grad));
  RETURN_IF_ERROR(activation_d.Upload(activation));
  RETURN_IF_ERROR(
      RunAndWait(ReluBackward{grad_d.data(), activation_d.data(), grad.size()}, "ReluBackward"));
  return grad_d.Download(grad);
}

Status RunL2Normalize(std::span<const float> y, uint32_t rows, uint32_t dim, float min_norm,
                      std::vector<float>& u, std::vector<float>& norms) {
  DeviceCopy<float> y_d, u_d, norms_d;
  RETURN_IF_ERROR(y_d.Upload(y));
  RETURN_IF_ERROR(u_d.Allocate(size_t{rows} * dim));
  RETURN_IF_ERROR(norms_d.Allocate(rows));
  RETURN_IF_ERROR(RunAndWait(
      L2Normalize{y_d.data(), rows, dim, min_norm, u_d.data(), norms_d.data()}, "L2Normalize"));
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
  RETURN_IF_ERROR(RunAndWait(
      L2NormalizeBackward{u_d.data(), norms_d.data(), du_d.data(), rows, dim, dy_d.data()},
      "L2NormalizeBackward"));
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
  RETURN_IF_ERROR(RunAndWait(
      SoftmaxCrossEntropy{logits_d.data(), batch, column_offset.empty() ? nullptr : offset_d.data(),
                          row_loss_d.data(), mean_d.data()},
      "SoftmaxCrossEntropy"));
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
  RETURN_IF_ERROR(RunAndWait(Adam{weights_d.data(), grads_d.data(), first_d.data(), second_d.data(),
                                  weights.size(), step_d.data()},
                             "Adam"));
  RETURN_IF_ERROR(weights_d.Download(weights));
  RETURN_IF_ERROR(first_d.Download(first_moment));
  return second_d.Download(second_moment);
}

}  // namespace ember::trainer::cuda
