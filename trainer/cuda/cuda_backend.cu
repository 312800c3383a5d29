// CudaBackend (cuda_backend_internal.h), set-up and host <-> device traffic: creating the device
// state and buffers, growing the buffers for a batch, staging rows and inverse indices up,
// moving dense weights and Adam state both ways; and the factory of trainer/cuda_backend.h.
#include "trainer/cuda/cuda_backend_internal.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "trainer/cuda/cuda_status.cuh"
#include "trainer/cuda/tower_ops.h"
#include "trainer/cuda_backend.h"

namespace ember::trainer {
namespace cuda {

Status CudaBackend::Init(const DenseWeights& initial) {
  RETURN_IF_ERROR(context_.Init(config_.tf32));
  ASSIGN_OR_RETURN(step_start_, CreateEvent());
  ASSIGN_OR_RETURN(step_stop_, CreateEvent());
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    widths_[Index(tower)] = TowerWidths(config_, tower);
    const std::vector<uint32_t>& widths = widths_[Index(tower)];
    for (size_t l = 0; l + 1 < widths.size(); ++l) {
      LayerSlice slice;
      slice.in = widths[l];
      slice.out = widths[l + 1];
      slice.weight = parameter_count_;
      parameter_count_ += size_t{slice.in} * slice.out;
      slice.bias = parameter_count_;
      parameter_count_ += slice.out;
      layers_[Index(tower)].push_back(slice);
      buffers_[Index(tower)].activations.emplace_back();
    }
  }
  RETURN_IF_ERROR(parameters_.Reserve(parameter_count_));
  RETURN_IF_ERROR(gradients_.Reserve(parameter_count_));
  RETURN_IF_ERROR(first_moment_.Reserve(parameter_count_));
  RETURN_IF_ERROR(second_moment_.Reserve(parameter_count_));
  RETURN_IF_ERROR(parameter_staging_.Reserve(parameter_count_));
  RETURN_IF_ERROR(loss_.Reserve(1));
  RETURN_IF_ERROR(loss_staging_.Reserve(1));
  RETURN_IF_ERROR(adam_step_.Reserve(1));
  RETURN_IF_ERROR(adam_step_staging_.Reserve(1));
  return SetWeights(initial);
}

DenseWeights CudaBackend::GetWeights() {
  auto weights = DownloadLayers(parameters_);
  return weights.ok() ? std::move(*weights) : DenseWeights{};  // empty: the device has failed
}

Result<DenseWeights> CudaBackend::DenseGradients() { return DownloadLayers(gradients_); }

Status CudaBackend::SetWeights(const DenseWeights& weights) {
  RETURN_IF_ERROR(CheckDenseWeightsShape(config_, weights));
  RETURN_IF_ERROR(UploadLayers(weights, parameters_));
  const size_t bytes = parameter_count_ * sizeof(float);
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(first_moment_.data(), 0, bytes, stream()));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(second_moment_.data(), 0, bytes, stream()));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
  step_ = 0;
  return Status::Ok();
}

Result<DenseState> CudaBackend::GetState() {
  DenseState state;
  ASSIGN_OR_RETURN(state.weights, DownloadLayers(parameters_));
  ASSIGN_OR_RETURN(state.first_moment, DownloadLayers(first_moment_));
  ASSIGN_OR_RETURN(state.second_moment, DownloadLayers(second_moment_));
  state.adam_steps = step_;
  return state;
}

Status CudaBackend::SetState(const DenseState& state) {
  RETURN_IF_ERROR(CheckDenseStateShape(config_, state));
  RETURN_IF_ERROR(UploadLayers(state.weights, parameters_));
  RETURN_IF_ERROR(UploadLayers(state.first_moment, first_moment_));
  RETURN_IF_ERROR(UploadLayers(state.second_moment, second_moment_));
  step_ = state.adam_steps;
  return Status::Ok();
}

void CudaBackend::DropGraphs() {
  for (CapturedStep& captured : captured_) captured = CapturedStep{};
}

Status CudaBackend::ReserveTower(Tower tower, uint32_t batch_size) {
  TowerBuffers& buffers = buffers_[Index(tower)];
  if (batch_size <= buffers.batch) return Status::Ok();
  const std::vector<uint32_t>& widths = widths_[Index(tower)];
  const size_t batch = batch_size;
  size_t widest = 0;
  for (uint32_t width : widths) widest = std::max<size_t>(widest, width);
  RETURN_IF_ERROR(Grow(buffers.input, batch * widths[0]));
  for (size_t l = 0; l < buffers.activations.size(); ++l) {
    RETURN_IF_ERROR(Grow(buffers.activations[l], batch * widths[l + 1]));
  }
  RETURN_IF_ERROR(Grow(buffers.norms, batch));
  RETURN_IF_ERROR(Grow(buffers.normalized, batch * config_.output_dim));
  RETURN_IF_ERROR(Grow(buffers.grad_normalized, batch * config_.output_dim));
  RETURN_IF_ERROR(Grow(buffers.grad_ping, batch * widest));
  RETURN_IF_ERROR(Grow(buffers.grad_pong, batch * widest));
  buffers.batch = batch_size;
  return Status::Ok();
}

Status CudaBackend::ReserveLoss(uint32_t batch_size) {
  if (batch_size <= loss_batch_) return Status::Ok();
  const size_t batch = batch_size;
  RETURN_IF_ERROR(Grow(logits_, batch * batch));
  RETURN_IF_ERROR(Grow(row_loss_, batch));
  RETURN_IF_ERROR(Grow(ones_, batch));
  const Fill fill_ones{ones_.data(), batch, 1.0f};
  RETURN_IF_ERROR(fill_ones.Run(stream()));
  loss_batch_ = batch_size;
  return Status::Ok();
}

Status CudaBackend::UploadRows(std::initializer_list<std::pair<Tower, const TowerInput*>> towers,
                               uint32_t batch_size) {
  size_t slot_rows = batch_size;
  for (const auto& entry : towers) {
    for (const SlotInput& slot : entry.second->slots) {
      slot_rows = std::max(slot_rows, slot.unique_rows.size() / config_.embedding_dim);
    }
  }
  const size_t slot_floats = slot_rows * config_.embedding_dim;
  size_t slot_count = 0;
  used_row_ranges_.clear();
  for (const auto& [tower, input] : towers) {
    std::vector<StagedSlot>& slots = buffers_[Index(tower)].slots;
    slots.clear();
    for (const SlotInput& slot : input->slots) {
      const size_t offset = slot_count * slot_floats;
      slots.push_back({offset, slot_count * batch_size, &slot});
      ++slot_count;
      // Unique counts of batch_size leave no gap to the next slot: one copy covers both.
      if (!used_row_ranges_.empty() &&
          used_row_ranges_.back().first + used_row_ranges_.back().second == offset) {
        used_row_ranges_.back().second += slot.unique_rows.size();
      } else {
        used_row_ranges_.emplace_back(offset, slot.unique_rows.size());
      }
    }
  }
  const size_t row_capacity = slot_count * slot_floats;
  const size_t inverse_entries = slot_count * batch_size;
  RETURN_IF_ERROR(row_staging_.Reserve(row_capacity));
  RETURN_IF_ERROR(inverse_staging_.Reserve(inverse_entries));
  RETURN_IF_ERROR(Grow(rows_, row_capacity));
  RETURN_IF_ERROR(Grow(row_grads_, row_capacity));
  RETURN_IF_ERROR(Grow(inverse_, inverse_entries));
  for (const auto& entry : towers) {
    for (const StagedSlot& slot : buffers_[Index(entry.first)].slots) {
      std::memcpy(row_staging_.data() + slot.rows_offset, slot.input->unique_rows.data(),
                  slot.input->unique_rows.size_bytes());
      std::memcpy(inverse_staging_.data() + slot.inverse_offset, slot.input->inverse.data(),
                  slot.input->inverse.size_bytes());
    }
  }
  staged_row_capacity_ = row_capacity;
  staged_slot_rows_ = slot_rows;
  for (const auto& [offset, floats] : used_row_ranges_) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(rows_.data() + offset, row_staging_.data() + offset,
                                         floats * sizeof(float), cudaMemcpyHostToDevice, stream()));
  }
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(inverse_.data(), inverse_staging_.data(),
                                       inverse_entries * sizeof(uint32_t), cudaMemcpyHostToDevice,
                                       stream()));
  return Status::Ok();
}

Status CudaBackend::UploadLayers(const DenseWeights& layers, DeviceArray<float>& target) {
  RETURN_IF_ERROR(context_.Activate());
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));  // the staging buffer is free
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    const std::vector<LinearWeights>& tower_layers = layers.tower(tower);
    for (size_t l = 0; l < tower_layers.size(); ++l) {
      const LayerSlice& slice = layers_[Index(tower)][l];
      std::memcpy(parameter_staging_.data() + slice.weight, tower_layers[l].weight.data(),
                  tower_layers[l].weight.size() * sizeof(float));
      std::memcpy(parameter_staging_.data() + slice.bias, tower_layers[l].bias.data(),
                  tower_layers[l].bias.size() * sizeof(float));
    }
  }
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(target.data(), parameter_staging_.data(),
                                       parameter_count_ * sizeof(float), cudaMemcpyHostToDevice,
                                       stream()));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
  return Status::Ok();
}

Result<DenseWeights> CudaBackend::DownloadLayers(DeviceArray<float>& source) {
  RETURN_IF_ERROR(context_.Activate());
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(parameter_staging_.data(), source.data(),
                                       parameter_count_ * sizeof(float), cudaMemcpyDeviceToHost,
                                       stream()));
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
  DenseWeights layers;
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    for (const LayerSlice& slice : layers_[Index(tower)]) {
      LinearWeights layer;
      layer.in = slice.in;
      layer.out = slice.out;
      const float* weight = parameter_staging_.data() + slice.weight;
      const float* bias = parameter_staging_.data() + slice.bias;
      layer.weight.assign(weight, weight + size_t{slice.in} * slice.out);
      layer.bias.assign(bias, bias + slice.out);
      layers.tower(tower).push_back(std::move(layer));
    }
  }
  return layers;
}

}  // namespace cuda

bool CudaDevicePresent() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    (void)cudaGetLastError();  // clear it: no device is an answer here, not a failure
    return false;
  }
  return count > 0;
}

Result<std::unique_ptr<Backend>> MakeCudaBackend(const ModelConfig& config, DenseWeights initial) {
  RETURN_IF_ERROR(ValidateModelConfig(config));
  RETURN_IF_ERROR(CheckDenseWeightsShape(config, initial));
  if (config.loss != LossKind::kInBatchSoftmax) {
    return FailedPrecondition("the CUDA backend trains the in-batch softmax only, not model.loss " +
                              std::string(LossName(config.loss)));
  }
  if (SharesNegatives(config)) {
    return FailedPrecondition("the CUDA backend trains the in-batch softmax without shared "
                              "negatives (model.negatives " + std::to_string(config.negatives) +
                              "): train it with the cpu backend");
  }
  if (!CudaDevicePresent()) return FailedPrecondition("no CUDA device is present");
  auto backend = std::make_unique<cuda::CudaBackend>(config);
  RETURN_IF_ERROR(backend->Init(initial).WithContext("starting the CUDA backend"));
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace ember::trainer
