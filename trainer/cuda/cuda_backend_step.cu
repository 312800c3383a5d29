// CudaBackend (cuda_backend_internal.h), the device work: a training step (uploads, the dense
// part launched directly or as a captured CUDA graph, downloads) and Encode's forward pass. Every
// kernel goes through an op (gather_ops.h, tower_ops.h, loss_ops.h, adam_op.h) and every matrix
// product through gemm.h; each GEMM below states the row-major product it computes.
#include "trainer/cuda/cuda_backend_internal.h"

#include <cuda_runtime.h>

#include <cstring>
#include <utility>

#include "trainer/cuda/cuda_status.cuh"
#include "trainer/cuda/gemm.h"
#include "trainer/cuda/loss_ops.h"
#include "trainer/cuda/tower_ops.h"

namespace ember::trainer::cuda {

namespace {

// The CUDA backend gathers one row per sample and slot.
Status RejectMultiValuedSlots(const TowerInput& input) {
  if (!HasMultiValuedSlots(input)) return Status::Ok();
  return InvalidArgument("multi-valued feature slots (several keys per sample) run on the cpu "
                         "backend; the cuda backend takes one key per sample and slot");
}

}  // namespace

Result<StepStats> CudaBackend::TrainStep(uint32_t batch_size, const TowerInput& user,
                                         const TowerInput& item) {
  RETURN_IF_ERROR(CheckTowerInput(config_, Tower::kUser, batch_size, user, true));
  RETURN_IF_ERROR(CheckTowerInput(config_, Tower::kItem, batch_size, item, true));
  RETURN_IF_ERROR(RejectMultiValuedSlots(user));
  RETURN_IF_ERROR(RejectMultiValuedSlots(item));
  RETURN_IF_ERROR(context_.Activate());
  RETURN_IF_ERROR(ReserveTower(Tower::kUser, batch_size));
  RETURN_IF_ERROR(ReserveTower(Tower::kItem, batch_size));
  RETURN_IF_ERROR(ReserveLoss(batch_size));
  const bool has_offset = !item.logit_offset.empty();
  if (has_offset) {
    RETURN_IF_ERROR(Grow(logit_offset_, batch_size));
    RETURN_IF_ERROR(logit_offset_staging_.Reserve(batch_size));
    std::memcpy(logit_offset_staging_.data(), item.logit_offset.data(),
                item.logit_offset.size_bytes());
  }
  ++step_;
  adam_step_staging_.data()[0] =
      MakeAdamStep(config_.learning_rate, config_.beta1, config_.beta2, config_.epsilon, step_);

  CUDA_RETURN_IF_ERROR(cudaEventRecord(step_start_.get(), stream()));
  RETURN_IF_ERROR(UploadRows({{Tower::kUser, &user}, {Tower::kItem, &item}}, batch_size));
  if (has_offset) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(logit_offset_.data(), logit_offset_staging_.data(),
                                         item.logit_offset.size_bytes(), cudaMemcpyHostToDevice,
                                         stream()));
  }
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(adam_step_.data(), adam_step_staging_.data(),
                                       sizeof(AdamStep), cudaMemcpyHostToDevice, stream()));
  RETURN_IF_ERROR(RunDensePart(batch_size, has_offset));

  // Gradients come back through the rows' staging buffer: its upload finished long before
  // these copies start, on the same stream.
  for (const auto& [offset, floats] : used_row_ranges_) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(row_staging_.data() + offset, row_grads_.data() + offset,
                                         floats * sizeof(float), cudaMemcpyDeviceToHost, stream()));
  }
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(loss_staging_.data(), loss_.data(), sizeof(float),
                                       cudaMemcpyDeviceToHost, stream()));
  CUDA_RETURN_IF_ERROR(cudaEventRecord(step_stop_.get(), stream()));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
  previous_train_batch_ = batch_size;
  previous_slot_rows_ = staged_slot_rows_;
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    for (const StagedSlot& slot : buffers_[Index(tower)].slots) {
      std::memcpy(slot.input->unique_grads.data(), row_staging_.data() + slot.rows_offset,
                  slot.input->unique_grads.size_bytes());
    }
  }
  StepStats stats;
  stats.loss = loss_staging_.data()[0];
  CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&stats.device_ms, step_start_.get(), step_stop_.get()));
  return stats;
}

Status CudaBackend::Encode(Tower tower, uint32_t batch_size, const TowerInput& input,
                           std::span<float> out) {
  RETURN_IF_ERROR(CheckEncodeInput(config_, tower, batch_size, input, out));
  RETURN_IF_ERROR(RejectMultiValuedSlots(input));
  const size_t expected = out.size();
  RETURN_IF_ERROR(context_.Activate());
  RETURN_IF_ERROR(ReserveTower(tower, batch_size));
  RETURN_IF_ERROR(output_staging_.Reserve(expected));
  RETURN_IF_ERROR(UploadRows({{tower, &input}}, batch_size));
  RETURN_IF_ERROR(Forward(tower, batch_size));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(output_staging_.data(),
                                       buffers_[Index(tower)].normalized.data(),
                                       expected * sizeof(float), cudaMemcpyDeviceToHost, stream()));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
  std::memcpy(out.data(), output_staging_.data(), expected * sizeof(float));
  return Status::Ok();
}

Status CudaBackend::RunDensePart(uint32_t batch_size, bool has_offset) {
  if (!config_.cuda_graphs) return RecordDensePart(batch_size, has_offset);
  CapturedStep& captured = captured_[has_offset ? 1 : 0];
  if (captured.exec && (captured.batch != batch_size || captured.slot_rows != staged_slot_rows_)) {
    RETURN_IF_ERROR(captured.exec.Reset("cudaGraphExecDestroy"));
    captured = CapturedStep{};
  }
  if (!captured.exec) {
    if (batch_size != previous_train_batch_ || staged_slot_rows_ != previous_slot_rows_) {
      return RecordDensePart(batch_size, has_offset);
    }
    RETURN_IF_ERROR(CaptureDensePart(batch_size, has_offset, &captured.exec)
                        .WithContext("capturing the training step in a CUDA graph"));
    captured.batch = batch_size;
    captured.slot_rows = staged_slot_rows_;
  }
  CUDA_RETURN_IF_ERROR(cudaGraphLaunch(captured.exec.get(), stream()));
  return Status::Ok();
}

Status CudaBackend::CaptureDensePart(uint32_t batch_size, bool has_offset, CudaGraphExec* exec) {
  CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeThreadLocal));
  const Status recorded = RecordDensePart(batch_size, has_offset);
  cudaGraph_t raw_graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream(), &raw_graph);
  const CudaGraph graph(raw_graph);  // released on every path below
  if (!recorded.ok() || ended != cudaSuccess) {
    (void)cudaGetLastError();  // a failed capture leaves its error behind; it is reported here
    return recorded.ok() ? CudaStatus(ended, "cudaStreamEndCapture") : recorded;
  }
  cudaGraphExec_t instance = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&instance, graph.get(), 0);
  if (instantiated != cudaSuccess) return CudaStatus(instantiated, "cudaGraphInstantiate");
  *exec = CudaGraphExec(instance);
  return Status::Ok();
}

Status CudaBackend::RecordDensePart(uint32_t batch_size, bool has_offset) {
  CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(row_grads_.data(), 0, staged_row_capacity_ * sizeof(float), stream()));
  RETURN_IF_ERROR(Forward(Tower::kUser, batch_size));
  RETURN_IF_ERROR(Forward(Tower::kItem, batch_size));
  RETURN_IF_ERROR(SoftmaxLossAndGrads(batch_size, has_offset ? logit_offset_.data() : nullptr));
  RETURN_IF_ERROR(Backward(Tower::kUser, batch_size));
  RETURN_IF_ERROR(Backward(Tower::kItem, batch_size));
  // Adam on all dense weights, with the constants TrainStep uploaded to adam_step_.
  const Adam adam{parameters_.data(),    gradients_.data(), first_moment_.data(),
                  second_moment_.data(), parameter_count_,  adam_step_.data()};
  return adam.Run(stream());
}

SlotColumns CudaBackend::SlotColumnsOf(Tower tower, size_t s, uint32_t batch_size) const {
  const uint32_t dim = config_.embedding_dim;
  return SlotColumns{inverse_.data() + buffers_[Index(tower)].slots[s].inverse_offset, batch_size,
                     dim, widths_[Index(tower)][0], static_cast<uint32_t>(s * dim)};
}

Status CudaBackend::Forward(Tower tower, uint32_t batch_size) {
  TowerBuffers& buffers = buffers_[Index(tower)];
  const std::vector<LayerSlice>& layers = layers_[Index(tower)];
  for (size_t s = 0; s < buffers.slots.size(); ++s) {
    const GatherSlotRows gather{SlotColumnsOf(tower, s, batch_size),
                                rows_.data() + buffers.slots[s].rows_offset, buffers.input.data()};
    RETURN_IF_ERROR(gather.Run(stream()));
  }
  const float* x = buffers.input.data();
  for (size_t l = 0; l < layers.size(); ++l) {
    const LayerSlice& layer = layers[l];
    float* z = buffers.activations[l].data();
    // Z (B x out) = X (B x in) W^T
    const RowMajorGemm product{.m = batch_size,
                               .n = layer.out,
                               .k = layer.in,
                               .a = x,
                               .b = parameters_.data() + layer.weight,
                               .transpose_b = true,
                               .c = z};
    RETURN_IF_ERROR(product.Run(context_.cublas()));
    const AddBiasActivate bias{z, parameters_.data() + layer.bias, batch_size, layer.out,
                               /*relu=*/l + 1 < layers.size()};
    RETURN_IF_ERROR(bias.Run(stream()));
    x = z;
  }
  const L2Normalize normalize{
      x, batch_size, config_.output_dim, kMinNorm, buffers.normalized.data(), buffers.norms.data()};
  return normalize.Run(stream());
}

Status CudaBackend::SoftmaxLossAndGrads(uint32_t batch_size, const float* logit_offset) {
  const uint32_t out_dim = config_.output_dim;
  const float inverse_temperature = 1.0f / config_.temperature;
  const float* user = buffers_[Index(Tower::kUser)].normalized.data();
  const float* item = buffers_[Index(Tower::kItem)].normalized.data();
  float* logits = logits_.data();
  // S (B x B) = U_user U_item^T / t
  const RowMajorGemm scores{.m = batch_size,
                            .n = batch_size,
                            .k = out_dim,
                            .a = user,
                            .b = item,
                            .transpose_b = true,
                            .c = logits,
                            .alpha = inverse_temperature};
  RETURN_IF_ERROR(scores.Run(context_.cublas()));
  const SoftmaxCrossEntropy loss{logits, batch_size, logit_offset, row_loss_.data(), loss_.data()};
  RETURN_IF_ERROR(loss.Run(stream()));
  // dU_user (B x out) = dS U_item / t
  const RowMajorGemm user_grad{.m = batch_size,
                               .n = out_dim,
                               .k = batch_size,
                               .a = logits,
                               .b = item,
                               .c = buffers_[Index(Tower::kUser)].grad_normalized.data(),
                               .alpha = inverse_temperature};
  RETURN_IF_ERROR(user_grad.Run(context_.cublas()));
  // dU_item (B x out) = dS^T U_user / t
  const RowMajorGemm item_grad{.m = batch_size,
                               .n = out_dim,
                               .k = batch_size,
                               .a = logits,
                               .transpose_a = true,
                               .b = user,
                               .c = buffers_[Index(Tower::kItem)].grad_normalized.data(),
                               .alpha = inverse_temperature};
  return item_grad.Run(context_.cublas());
}

Status CudaBackend::Backward(Tower tower, uint32_t batch_size) {
  TowerBuffers& buffers = buffers_[Index(tower)];
  const std::vector<LayerSlice>& layers = layers_[Index(tower)];
  float* grad = buffers.grad_ping.data();
  float* spare = buffers.grad_pong.data();
  const L2NormalizeBackward normalize{buffers.normalized.data(),
                                      buffers.norms.data(),
                                      buffers.grad_normalized.data(),
                                      batch_size,
                                      config_.output_dim,
                                      grad};
  RETURN_IF_ERROR(normalize.Run(stream()));
  for (size_t l = layers.size(); l-- > 0;) {
    const LayerSlice& layer = layers[l];
    const float* x = l == 0 ? buffers.input.data() : buffers.activations[l - 1].data();
    // dW (out x in) = dZ^T X
    const RowMajorGemm weight_grad{.m = layer.out,
                                   .n = layer.in,
                                   .k = batch_size,
                                   .a = grad,
                                   .transpose_a = true,
                                   .b = x,
                                   .c = gradients_.data() + layer.weight};
    RETURN_IF_ERROR(weight_grad.Run(context_.cublas()));
    // db (out) = dZ^T 1
    const ColumnSums bias_grad{batch_size, layer.out, grad, ones_.data(),
                               gradients_.data() + layer.bias};
    RETURN_IF_ERROR(bias_grad.Run(context_.cublas()));
    // dX (B x in) = dZ W, then through the previous layer's ReLU.
    const RowMajorGemm input_grad{.m = batch_size,
                                  .n = layer.in,
                                  .k = layer.out,
                                  .a = grad,
                                  .b = parameters_.data() + layer.weight,
                                  .c = spare};
    RETURN_IF_ERROR(input_grad.Run(context_.cublas()));
    if (l > 0) {
      const ReluBackward relu{spare, x, size_t{batch_size} * layer.in};
      RETURN_IF_ERROR(relu.Run(stream()));
    }
    std::swap(grad, spare);
  }
  for (size_t s = 0; s < buffers.slots.size(); ++s) {
    const ScatterAddSlotGrads scatter{SlotColumnsOf(tower, s, batch_size), grad,
                                      row_grads_.data() + buffers.slots[s].rows_offset};
    RETURN_IF_ERROR(scatter.Run(stream()));
  }
  return Status::Ok();
}

}  // namespace ember::trainer::cuda
