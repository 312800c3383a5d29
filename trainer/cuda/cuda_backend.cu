// CUDA backend: the two-tower model on one GPU, the same maths as trainer/cpu_backend.cc.
//
// Matrix products are cuBLAS SGEMMs in the default math mode (full FP32, no TF32); the rest are
// the kernels in this folder. Everything runs on one stream. Per step, every slot's unique rows
// and inverse indices go up through pinned staging buffers, and the unique-row gradients and
// the loss come back the same way; the dense weights and Adam state stay on the device.
//
// cuBLAS is column-major: a row-major R x C matrix is, to cuBLAS, its C x R transpose with
// leading dimension C. Each GEMM below states the row-major product it computes.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trainer/backend.h"
#include "trainer/cuda/adam_kernel.cuh"
#include "trainer/cuda/cuda_status.cuh"
#include "trainer/cuda/device_buffer.cuh"
#include "trainer/cuda/launch.cuh"
#include "trainer/cuda/loss_kernels.cuh"
#include "trainer/cuda/tower_kernels.cuh"
#include "trainer/cuda_backend.h"

namespace ember::trainer {
namespace {

using cuda::DeviceArray;
using cuda::PinnedArray;

// Norms below this are treated as this, so a zero output does not divide by zero.
constexpr float kMinNorm = 1e-12f;

// Where one Linear layer lives in the flat parameter array.
struct LayerSlice {
  uint32_t in = 0, out = 0;
  size_t weight = 0;  // offset of the out x in row-major weight
  size_t bias = 0;    // offset of the out biases
};

// One slot's place in the staged rows / gradients and inverse arrays of a call.
struct StagedSlot {
  size_t rows_offset = 0;     // floats into the rows and gradients arrays
  size_t inverse_offset = 0;  // entries into the inverse array
  const SlotInput* input = nullptr;
};

// Device buffers of one tower, sized for the largest batch seen.
struct TowerBuffers {
  uint32_t batch = 0;
  DeviceArray<float> input;                                      // B x widths[0]
  std::vector<std::unique_ptr<DeviceArray<float>>> activations;  // per layer, B x widths[l+1]
  DeviceArray<float> norms;                                      // B
  DeviceArray<float> normalized;                                 // B x output_dim
  DeviceArray<float> grad_normalized;                            // B x output_dim
  DeviceArray<float> grad_ping, grad_pong;                       // B x widest layer
  std::vector<StagedSlot> slots;                                 // this call's slots
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const ModelConfig& config) : config_(config) {}

  ~CudaBackend() override {
    if (cublas_ != nullptr) (void)cublasDestroy(cublas_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }

  Status Init(const DenseWeights& initial) {
    CUDA_RETURN_IF_ERROR(cudaGetDevice(&device_));
    CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUBLAS_RETURN_IF_ERROR(cublasCreate(&cublas_));
    CUBLAS_RETURN_IF_ERROR(cublasSetStream(cublas_, stream_));
    CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
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
        buffers_[Index(tower)].activations.push_back(std::make_unique<DeviceArray<float>>());
      }
    }
    RETURN_IF_ERROR(parameters_.Reserve(parameter_count_));
    RETURN_IF_ERROR(gradients_.Reserve(parameter_count_));
    RETURN_IF_ERROR(first_moment_.Reserve(parameter_count_));
    RETURN_IF_ERROR(second_moment_.Reserve(parameter_count_));
    RETURN_IF_ERROR(parameter_staging_.Reserve(parameter_count_));
    RETURN_IF_ERROR(loss_.Reserve(1));
    RETURN_IF_ERROR(loss_staging_.Reserve(1));
    return SetWeights(initial);
  }

  std::string_view name() const override { return "cuda"; }

  Result<StepStats> TrainStep(uint32_t batch_size, const TowerInput& user,
                              const TowerInput& item) override {
    RETURN_IF_ERROR(CheckTowerInput(config_, Tower::kUser, batch_size, user, true));
    RETURN_IF_ERROR(CheckTowerInput(config_, Tower::kItem, batch_size, item, true));
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    RETURN_IF_ERROR(ReserveTower(Tower::kUser, batch_size));
    RETURN_IF_ERROR(ReserveTower(Tower::kItem, batch_size));
    RETURN_IF_ERROR(ReserveLoss(batch_size));
    RETURN_IF_ERROR(UploadRows({{Tower::kUser, &user}, {Tower::kItem, &item}}, batch_size));

    RETURN_IF_ERROR(Forward(Tower::kUser, batch_size));
    RETURN_IF_ERROR(Forward(Tower::kItem, batch_size));
    const float* logit_offset = nullptr;
    if (!item.logit_offset.empty()) {
      RETURN_IF_ERROR(logit_offset_.Reserve(batch_size));
      RETURN_IF_ERROR(logit_offset_staging_.Reserve(batch_size));
      std::memcpy(logit_offset_staging_.data(), item.logit_offset.data(),
                  item.logit_offset.size_bytes());
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(logit_offset_.data(), logit_offset_staging_.data(),
                                           item.logit_offset.size_bytes(),
                                           cudaMemcpyHostToDevice, stream_));
      logit_offset = logit_offset_.data();
    }
    RETURN_IF_ERROR(SoftmaxLossAndGrads(batch_size, logit_offset));
    CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(row_grads_.data(), 0, staged_row_floats_ * sizeof(float), stream_));
    RETURN_IF_ERROR(Backward(Tower::kUser, batch_size));
    RETURN_IF_ERROR(Backward(Tower::kItem, batch_size));
    RETURN_IF_ERROR(AdamUpdate());

    // Gradients come back through the rows' staging buffer: its upload finished long before
    // this copy starts, on the same stream.
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(row_staging_.data(), row_grads_.data(),
                                         staged_row_floats_ * sizeof(float), cudaMemcpyDeviceToHost,
                                         stream_));
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(loss_staging_.data(), loss_.data(), sizeof(float),
                                         cudaMemcpyDeviceToHost, stream_));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    for (Tower tower : {Tower::kUser, Tower::kItem}) {
      for (const StagedSlot& slot : buffers_[Index(tower)].slots) {
        std::memcpy(slot.input->unique_grads.data(), row_staging_.data() + slot.rows_offset,
                    slot.input->unique_grads.size_bytes());
      }
    }
    StepStats stats;
    stats.loss = loss_staging_.data()[0];
    return stats;
  }

  Status Encode(Tower tower, uint32_t batch_size, const TowerInput& input,
                std::span<float> out) override {
    RETURN_IF_ERROR(CheckEncodeInput(config_, tower, batch_size, input, out));
    const size_t expected = out.size();
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    RETURN_IF_ERROR(ReserveTower(tower, batch_size));
    RETURN_IF_ERROR(output_staging_.Reserve(expected));
    RETURN_IF_ERROR(UploadRows({{tower, &input}}, batch_size));
    RETURN_IF_ERROR(Forward(tower, batch_size));
    CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(output_staging_.data(), buffers_[Index(tower)].normalized.data(),
                        expected * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    std::memcpy(out.data(), output_staging_.data(), expected * sizeof(float));
    return Status::Ok();
  }

  DenseWeights GetWeights() override {
    DenseWeights weights;
    if (!DownloadParameters().ok()) return weights;  // empty: the device has failed
    for (Tower tower : {Tower::kUser, Tower::kItem}) {
      for (const LayerSlice& slice : layers_[Index(tower)]) {
        LinearWeights layer;
        layer.in = slice.in;
        layer.out = slice.out;
        const float* weight = parameter_staging_.data() + slice.weight;
        const float* bias = parameter_staging_.data() + slice.bias;
        layer.weight.assign(weight, weight + size_t{slice.in} * slice.out);
        layer.bias.assign(bias, bias + slice.out);
        weights.tower(tower).push_back(std::move(layer));
      }
    }
    return weights;
  }

  Status SetWeights(const DenseWeights& weights) override {
    RETURN_IF_ERROR(CheckDenseWeightsShape(config_, weights));
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));  // the staging buffer is free
    for (Tower tower : {Tower::kUser, Tower::kItem}) {
      const std::vector<LinearWeights>& layers = weights.tower(tower);
      for (size_t l = 0; l < layers.size(); ++l) {
        const LayerSlice& slice = layers_[Index(tower)][l];
        std::memcpy(parameter_staging_.data() + slice.weight, layers[l].weight.data(),
                    layers[l].weight.size() * sizeof(float));
        std::memcpy(parameter_staging_.data() + slice.bias, layers[l].bias.data(),
                    layers[l].bias.size() * sizeof(float));
      }
    }
    const size_t bytes = parameter_count_ * sizeof(float);
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(parameters_.data(), parameter_staging_.data(), bytes,
                                         cudaMemcpyHostToDevice, stream_));
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(first_moment_.data(), 0, bytes, stream_));
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(second_moment_.data(), 0, bytes, stream_));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    step_ = 0;
    return Status::Ok();
  }

 private:
  static int Index(Tower tower) { return static_cast<int>(tower); }

  Status ReserveTower(Tower tower, uint32_t batch_size) {
    TowerBuffers& buffers = buffers_[Index(tower)];
    if (batch_size <= buffers.batch) return Status::Ok();
    const std::vector<uint32_t>& widths = widths_[Index(tower)];
    const size_t batch = batch_size;
    size_t widest = 0;
    for (uint32_t width : widths) widest = std::max<size_t>(widest, width);
    RETURN_IF_ERROR(buffers.input.Reserve(batch * widths[0]));
    for (size_t l = 0; l < buffers.activations.size(); ++l) {
      RETURN_IF_ERROR(buffers.activations[l]->Reserve(batch * widths[l + 1]));
    }
    RETURN_IF_ERROR(buffers.norms.Reserve(batch));
    RETURN_IF_ERROR(buffers.normalized.Reserve(batch * config_.output_dim));
    RETURN_IF_ERROR(buffers.grad_normalized.Reserve(batch * config_.output_dim));
    RETURN_IF_ERROR(buffers.grad_ping.Reserve(batch * widest));
    RETURN_IF_ERROR(buffers.grad_pong.Reserve(batch * widest));
    buffers.batch = batch_size;
    return Status::Ok();
  }

  // The B x B logits, per-row losses and the bias-gradient ones, needed only for training.
  Status ReserveLoss(uint32_t batch_size) {
    if (batch_size <= loss_batch_) return Status::Ok();
    const size_t batch = batch_size;
    RETURN_IF_ERROR(logits_.Reserve(batch * batch));
    RETURN_IF_ERROR(row_loss_.Reserve(batch));
    RETURN_IF_ERROR(ones_.Reserve(batch));
    cuda::FillKernel<<<cuda::BlocksFor(batch), cuda::kThreadsPerBlock, 0, stream_>>>(ones_.data(),
                                                                                     batch, 1.0f);
    RETURN_IF_ERROR(cuda::LaunchStatus("FillKernel"));
    loss_batch_ = batch_size;
    return Status::Ok();
  }

  // Stages the slots of `towers` into pinned memory and starts their upload; records each
  // slot's offsets in its tower's buffers. Also sizes the device gradient array to match.
  Status UploadRows(std::initializer_list<std::pair<Tower, const TowerInput*>> towers,
                    uint32_t batch_size) {
    size_t row_floats = 0, inverse_entries = 0;
    for (const auto& [tower, input] : towers) {
      std::vector<StagedSlot>& slots = buffers_[Index(tower)].slots;
      slots.clear();
      for (const SlotInput& slot : input->slots) {
        slots.push_back({row_floats, inverse_entries, &slot});
        row_floats += slot.unique_rows.size();
        inverse_entries += batch_size;
      }
    }
    RETURN_IF_ERROR(row_staging_.Reserve(row_floats));
    RETURN_IF_ERROR(inverse_staging_.Reserve(inverse_entries));
    RETURN_IF_ERROR(rows_.Reserve(row_floats));
    RETURN_IF_ERROR(row_grads_.Reserve(row_floats));
    RETURN_IF_ERROR(inverse_.Reserve(inverse_entries));
    for (const auto& entry : towers) {
      for (const StagedSlot& slot : buffers_[Index(entry.first)].slots) {
        std::memcpy(row_staging_.data() + slot.rows_offset, slot.input->unique_rows.data(),
                    slot.input->unique_rows.size_bytes());
        std::memcpy(inverse_staging_.data() + slot.inverse_offset, slot.input->inverse.data(),
                    slot.input->inverse.size_bytes());
      }
    }
    staged_row_floats_ = row_floats;
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(rows_.data(), row_staging_.data(),
                                         row_floats * sizeof(float), cudaMemcpyHostToDevice,
                                         stream_));
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(inverse_.data(), inverse_staging_.data(),
                                         inverse_entries * sizeof(uint32_t), cudaMemcpyHostToDevice,
                                         stream_));
    return Status::Ok();
  }

  // Fills the tower's buffers up to `normalized` (and `norms`) from the uploaded rows.
  Status Forward(Tower tower, uint32_t batch_size) {
    TowerBuffers& buffers = buffers_[Index(tower)];
    const std::vector<LayerSlice>& layers = layers_[Index(tower)];
    const uint32_t dim = config_.embedding_dim;
    const uint32_t input_width = widths_[Index(tower)][0];
    const size_t slot_elements = size_t{batch_size} * dim;
    for (size_t s = 0; s < buffers.slots.size(); ++s) {
      const StagedSlot& slot = buffers.slots[s];
      cuda::GatherSlotRowsKernel<<<cuda::BlocksFor(slot_elements), cuda::kThreadsPerBlock, 0,
                                   stream_>>>(
          rows_.data() + slot.rows_offset, inverse_.data() + slot.inverse_offset, batch_size, dim,
          input_width, static_cast<uint32_t>(s * dim), buffers.input.data());
    }
    RETURN_IF_ERROR(cuda::LaunchStatus("GatherSlotRowsKernel"));

    const int batch = static_cast<int>(batch_size);
    const float one = 1.0f, zero = 0.0f;
    const float* x = buffers.input.data();
    for (size_t l = 0; l < layers.size(); ++l) {
      const LayerSlice& layer = layers[l];
      float* z = buffers.activations[l]->data();
      const int in = static_cast<int>(layer.in), out = static_cast<int>(layer.out);
      // Z (B x out) = X (B x in) W^T
      CUBLAS_RETURN_IF_ERROR(cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, out, batch, in, &one,
                                         parameters_.data() + layer.weight, in, x, in, &zero, z,
                                         out));
      const bool relu = l + 1 < layers.size();
      cuda::AddBiasActivateKernel<<<cuda::BlocksFor(size_t{batch_size} * layer.out),
                                    cuda::kThreadsPerBlock, 0, stream_>>>(
          z, parameters_.data() + layer.bias, batch_size, layer.out, relu);
      RETURN_IF_ERROR(cuda::LaunchStatus("AddBiasActivateKernel"));
      x = z;
    }
    cuda::L2NormalizeKernel<<<cuda::RowBlocksFor(batch_size), cuda::kThreadsPerBlock, 0, stream_>>>(
        x, batch_size, config_.output_dim, kMinNorm, buffers.normalized.data(),
        buffers.norms.data());
    return cuda::LaunchStatus("L2NormalizeKernel");
  }

  // From both towers' `normalized`: the mean loss into loss_ and each tower's grad_normalized.
  Status SoftmaxLossAndGrads(uint32_t batch_size, const float* logit_offset) {
    const int batch = static_cast<int>(batch_size);
    const int out_dim = static_cast<int>(config_.output_dim);
    const float inverse_temperature = 1.0f / config_.temperature;
    const float zero = 0.0f;
    const float* user = buffers_[Index(Tower::kUser)].normalized.data();
    const float* item = buffers_[Index(Tower::kItem)].normalized.data();
    float* logits = logits_.data();
    // S (B x B) = U_user U_item^T / t
    CUBLAS_RETURN_IF_ERROR(cublasSgemm(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, batch, batch, out_dim,
                                       &inverse_temperature, item, out_dim, user, out_dim, &zero,
                                       logits, batch));
    const unsigned row_blocks = std::min<unsigned>(batch_size, 65535);
    cuda::SoftmaxCrossEntropyKernel<<<row_blocks, cuda::kThreadsPerBlock, 0, stream_>>>(
        logits, batch_size, logit_offset, row_loss_.data());
    RETURN_IF_ERROR(cuda::LaunchStatus("SoftmaxCrossEntropyKernel"));
    cuda::MeanKernel<<<1, cuda::kThreadsPerBlock, 0, stream_>>>(row_loss_.data(), batch_size,
                                                                loss_.data());
    RETURN_IF_ERROR(cuda::LaunchStatus("MeanKernel"));
    // dU_user (B x out) = dS U_item / t
    CUBLAS_RETURN_IF_ERROR(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, out_dim, batch, batch,
                                       &inverse_temperature, item, out_dim, logits, batch, &zero,
                                       buffers_[Index(Tower::kUser)].grad_normalized.data(),
                                       out_dim));
    // dU_item (B x out) = dS^T U_user / t
    CUBLAS_RETURN_IF_ERROR(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, out_dim, batch, batch,
                                       &inverse_temperature, user, out_dim, logits, batch, &zero,
                                       buffers_[Index(Tower::kItem)].grad_normalized.data(),
                                       out_dim));
    return Status::Ok();
  }

  // From the tower's grad_normalized: the tower's slice of gradients_ and, scatter-added, its
  // slots' unique-row gradients in row_grads_ (zeroed beforehand by the caller).
  Status Backward(Tower tower, uint32_t batch_size) {
    TowerBuffers& buffers = buffers_[Index(tower)];
    const std::vector<LayerSlice>& layers = layers_[Index(tower)];
    const int batch = static_cast<int>(batch_size);
    float* grad = buffers.grad_ping.data();
    float* spare = buffers.grad_pong.data();
    cuda::L2NormalizeBackwardKernel<<<cuda::RowBlocksFor(batch_size), cuda::kThreadsPerBlock, 0,
                                      stream_>>>(buffers.normalized.data(), buffers.norms.data(),
                                                 buffers.grad_normalized.data(), batch_size,
                                                 config_.output_dim, grad);
    RETURN_IF_ERROR(cuda::LaunchStatus("L2NormalizeBackwardKernel"));

    const float one = 1.0f, zero = 0.0f;
    for (size_t l = layers.size(); l-- > 0;) {
      const LayerSlice& layer = layers[l];
      const int in = static_cast<int>(layer.in), out = static_cast<int>(layer.out);
      const float* x = l == 0 ? buffers.input.data() : buffers.activations[l - 1]->data();
      // dW (out x in) = dZ^T X
      CUBLAS_RETURN_IF_ERROR(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, in, out, batch, &one, x,
                                         in, grad, out, &zero, gradients_.data() + layer.weight,
                                         in));
      // db (out) = dZ^T 1
      CUBLAS_RETURN_IF_ERROR(cublasSgemv(cublas_, CUBLAS_OP_N, out, batch, &one, grad, out,
                                         ones_.data(), 1, &zero, gradients_.data() + layer.bias,
                                         1));
      // dX (B x in) = dZ W, then through the previous layer's ReLU.
      CUBLAS_RETURN_IF_ERROR(cublasSgemm(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, in, batch, out, &one,
                                         parameters_.data() + layer.weight, in, grad, out, &zero,
                                         spare, in));
      if (l > 0) {
        const size_t count = size_t{batch_size} * layer.in;
        cuda::ReluBackwardKernel<<<cuda::BlocksFor(count), cuda::kThreadsPerBlock, 0, stream_>>>(
            spare, x, count);
        RETURN_IF_ERROR(cuda::LaunchStatus("ReluBackwardKernel"));
      }
      std::swap(grad, spare);
    }

    const uint32_t dim = config_.embedding_dim;
    const uint32_t input_width = widths_[Index(tower)][0];
    const size_t slot_elements = size_t{batch_size} * dim;
    for (size_t s = 0; s < buffers.slots.size(); ++s) {
      const StagedSlot& slot = buffers.slots[s];
      cuda::ScatterAddSlotGradsKernel<<<cuda::BlocksFor(slot_elements), cuda::kThreadsPerBlock, 0,
                                        stream_>>>(
          grad, inverse_.data() + slot.inverse_offset, batch_size, dim, input_width,
          static_cast<uint32_t>(s * dim), row_grads_.data() + slot.rows_offset);
    }
    return cuda::LaunchStatus("ScatterAddSlotGradsKernel");
  }

  Status AdamUpdate() {
    ++step_;
    const double bias1 = 1.0 - std::pow(static_cast<double>(config_.beta1), step_);
    const double bias2 = 1.0 - std::pow(static_cast<double>(config_.beta2), step_);
    cuda::AdamStep step;
    step.beta1 = config_.beta1;
    step.beta2 = config_.beta2;
    step.epsilon = config_.epsilon;
    step.step_size = static_cast<float>(config_.learning_rate / bias1);
    step.inverse_sqrt_bias2 = static_cast<float>(1.0 / std::sqrt(bias2));
    cuda::AdamKernel<<<cuda::BlocksFor(parameter_count_), cuda::kThreadsPerBlock, 0, stream_>>>(
        parameters_.data(), gradients_.data(), first_moment_.data(), second_moment_.data(),
        parameter_count_, step);
    return cuda::LaunchStatus("AdamKernel");
  }

  Status DownloadParameters() {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(parameter_staging_.data(), parameters_.data(),
                                         parameter_count_ * sizeof(float), cudaMemcpyDeviceToHost,
                                         stream_));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }

  const ModelConfig config_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;

  std::vector<uint32_t> widths_[2];    // per tower, TowerWidths
  std::vector<LayerSlice> layers_[2];  // per tower, into the flat parameter arrays
  size_t parameter_count_ = 0;
  DeviceArray<float> parameters_, gradients_, first_moment_, second_moment_;
  PinnedArray<float> parameter_staging_;
  uint64_t step_ = 0;  // Adam steps taken since the weights were set

  TowerBuffers buffers_[2];
  uint32_t loss_batch_ = 0;  // the batch logits_, row_loss_ and ones_ are sized for
  DeviceArray<float> logits_, row_loss_, ones_, loss_;
  DeviceArray<float> logit_offset_;           // B, when the item input carries one
  PinnedArray<float> logit_offset_staging_;
  PinnedArray<float> loss_staging_;

  // This call's unique rows of every slot, back to back, and their gradients (same layout).
  size_t staged_row_floats_ = 0;
  DeviceArray<float> rows_, row_grads_;
  DeviceArray<uint32_t> inverse_;
  PinnedArray<float> row_staging_;  // rows up, then gradients down
  PinnedArray<uint32_t> inverse_staging_;
  PinnedArray<float> output_staging_;  // Encode's output
};

}  // namespace

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
  if (!CudaDevicePresent()) return FailedPrecondition("no CUDA device is present");
  auto backend = std::make_unique<CudaBackend>(config);
  RETURN_IF_ERROR(backend->Init(initial).WithContext("starting the CUDA backend"));
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace ember::trainer
