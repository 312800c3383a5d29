// CUDA backend: the two-tower model on one GPU, the same maths as trainer/cpu_backend.cc.
//
// Matrix products are cuBLAS SGEMMs, in full FP32 unless the config asks for TF32; the rest are
// the kernels in this folder. Everything runs on one stream. Per step, every slot's unique rows
// and inverse indices go up through pinned staging buffers, and the unique-row gradients and
// the loss come back the same way; the dense weights and Adam state stay on the device.
//
// A training step is: uploads, the dense part (gather, forward, loss, backward, scatter-add into
// unique-row gradients, Adam), downloads, and the one host synchronisation that waits for the
// gradients. The dense part launches the same kernels with the same arguments on every step of
// one batch size: each slot owns a fixed region of the row and gradient arrays, sized for the
// worst case of batch_size unique rows, and Adam reads its per-step constants from device memory.
// So once a batch size repeats, the dense part is captured into a CUDA graph and replayed.
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

// cuBLAS workspace, set explicitly so that cuBLAS never allocates while a graph is captured.
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

// An instantiated capture of the dense part of a step, valid for one batch size and slot size.
struct CapturedStep {
  cudaGraphExec_t exec = nullptr;
  uint32_t batch = 0;
  size_t slot_rows = 0;
};

// Where one Linear layer lives in the flat parameter array.
struct LayerSlice {
  uint32_t in = 0, out = 0;
  size_t weight = 0;  // offset of the out x in row-major weight
  size_t bias = 0;    // offset of the out biases
};

// One slot's place in the staged rows / gradients and inverse arrays of a call. Slot k of a call
// starts at k x slot_rows x D floats, slot_rows = batch (or the largest unique count when some
// slot has more rows than samples), and at k x batch inverse entries, whatever its unique count.
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
    DropGraphs();
    if (step_start_ != nullptr) (void)cudaEventDestroy(step_start_);
    if (step_stop_ != nullptr) (void)cudaEventDestroy(step_stop_);
    if (cublas_ != nullptr) (void)cublasDestroy(cublas_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }

  Status Init(const DenseWeights& initial) {
    CUDA_RETURN_IF_ERROR(cudaGetDevice(&device_));
    CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUBLAS_RETURN_IF_ERROR(cublasCreate(&cublas_));
    CUBLAS_RETURN_IF_ERROR(cublasSetStream(cublas_, stream_));
    CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(
        cublas_, config_.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    RETURN_IF_ERROR(cublas_workspace_.Reserve(kCublasWorkspaceBytes));
    CUBLAS_RETURN_IF_ERROR(
        cublasSetWorkspace(cublas_, cublas_workspace_.data(), kCublasWorkspaceBytes));
    CUDA_RETURN_IF_ERROR(cudaEventCreate(&step_start_));
    CUDA_RETURN_IF_ERROR(cudaEventCreate(&step_stop_));
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
    RETURN_IF_ERROR(adam_step_.Reserve(1));
    RETURN_IF_ERROR(adam_step_staging_.Reserve(1));
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
    const bool has_offset = !item.logit_offset.empty();
    if (has_offset) {
      RETURN_IF_ERROR(Grow(logit_offset_, batch_size));
      RETURN_IF_ERROR(logit_offset_staging_.Reserve(batch_size));
      std::memcpy(logit_offset_staging_.data(), item.logit_offset.data(),
                  item.logit_offset.size_bytes());
    }
    ++step_;
    adam_step_staging_.data()[0] = cuda::MakeAdamStep(config_.learning_rate, config_.beta1,
                                                      config_.beta2, config_.epsilon, step_);

    CUDA_RETURN_IF_ERROR(cudaEventRecord(step_start_, stream_));
    RETURN_IF_ERROR(UploadRows({{Tower::kUser, &user}, {Tower::kItem, &item}}, batch_size));
    if (has_offset) {
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(logit_offset_.data(), logit_offset_staging_.data(),
                                           item.logit_offset.size_bytes(),
                                           cudaMemcpyHostToDevice, stream_));
    }
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(adam_step_.data(), adam_step_staging_.data(),
                                         sizeof(cuda::AdamStep), cudaMemcpyHostToDevice, stream_));
    RETURN_IF_ERROR(RunDensePart(batch_size, has_offset));

    // Gradients come back through the rows' staging buffer: its upload finished long before
    // these copies start, on the same stream.
    for (const auto& [offset, floats] : used_row_ranges_) {
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(row_staging_.data() + offset, row_grads_.data() + offset,
                                           floats * sizeof(float), cudaMemcpyDeviceToHost,
                                           stream_));
    }
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(loss_staging_.data(), loss_.data(), sizeof(float),
                                         cudaMemcpyDeviceToHost, stream_));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(step_stop_, stream_));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
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
    CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&stats.device_ms, step_start_, step_stop_));
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
    auto weights = DownloadLayers(parameters_);
    return weights.ok() ? std::move(*weights) : DenseWeights{};  // empty: the device has failed
  }

  Result<DenseWeights> DenseGradients() override { return DownloadLayers(gradients_); }

  Status SetWeights(const DenseWeights& weights) override {
    RETURN_IF_ERROR(CheckDenseWeightsShape(config_, weights));
    RETURN_IF_ERROR(UploadLayers(weights, parameters_));
    const size_t bytes = parameter_count_ * sizeof(float);
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(first_moment_.data(), 0, bytes, stream_));
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(second_moment_.data(), 0, bytes, stream_));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    step_ = 0;
    return Status::Ok();
  }

  Result<DenseState> GetState() override {
    DenseState state;
    ASSIGN_OR_RETURN(state.weights, DownloadLayers(parameters_));
    ASSIGN_OR_RETURN(state.first_moment, DownloadLayers(first_moment_));
    ASSIGN_OR_RETURN(state.second_moment, DownloadLayers(second_moment_));
    state.adam_steps = step_;
    return state;
  }

  Status SetState(const DenseState& state) override {
    RETURN_IF_ERROR(CheckDenseStateShape(config_, state));
    RETURN_IF_ERROR(UploadLayers(state.weights, parameters_));
    RETURN_IF_ERROR(UploadLayers(state.first_moment, first_moment_));
    RETURN_IF_ERROR(UploadLayers(state.second_moment, second_moment_));
    step_ = state.adam_steps;
    return Status::Ok();
  }

 private:
  static int Index(Tower tower) { return static_cast<int>(tower); }

  // Reserve for device arrays a captured graph may point into: reallocating one invalidates the
  // graphs, so they are dropped and captured again.
  template <typename T>
  Status Grow(DeviceArray<T>& array, size_t count) {
    if (count > array.capacity()) DropGraphs();
    return array.Reserve(count);
  }

  void DropGraphs() {
    for (CapturedStep& captured : captured_) {
      if (captured.exec != nullptr) (void)cudaGraphExecDestroy(captured.exec);
      captured = CapturedStep{};
    }
  }

  // The dense part of a training step, from uploaded rows, inverse indices, logit offset (when
  // `has_offset`) and Adam constants to unique-row gradients in row_grads_, the loss in loss_ and
  // updated weights. Replays a captured graph when there is one for this batch size, captures
  // one when the batch size repeats the previous step's, and otherwise launches directly.
  Status RunDensePart(uint32_t batch_size, bool has_offset) {
    if (!config_.cuda_graphs) return RecordDensePart(batch_size, has_offset);
    CapturedStep& captured = captured_[has_offset ? 1 : 0];
    if (captured.exec != nullptr &&
        (captured.batch != batch_size || captured.slot_rows != staged_slot_rows_)) {
      CUDA_RETURN_IF_ERROR(cudaGraphExecDestroy(captured.exec));
      captured = CapturedStep{};
    }
    if (captured.exec == nullptr) {
      if (batch_size != previous_train_batch_ || staged_slot_rows_ != previous_slot_rows_) {
        return RecordDensePart(batch_size, has_offset);
      }
      RETURN_IF_ERROR(CaptureDensePart(batch_size, has_offset, &captured.exec)
                          .WithContext("capturing the training step in a CUDA graph"));
      captured.batch = batch_size;
      captured.slot_rows = staged_slot_rows_;
    }
    CUDA_RETURN_IF_ERROR(cudaGraphLaunch(captured.exec, stream_));
    return Status::Ok();
  }

  Status CaptureDensePart(uint32_t batch_size, bool has_offset, cudaGraphExec_t* exec) {
    CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    const Status recorded = RecordDensePart(batch_size, has_offset);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    if (!recorded.ok() || ended != cudaSuccess) {
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
      (void)cudaGetLastError();  // a failed capture leaves its error behind; it is reported here
      return recorded.ok() ? cuda::CudaStatus(ended, "cudaStreamEndCapture") : recorded;
    }
    const cudaError_t instantiated = cudaGraphInstantiate(exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    return cuda::CudaStatus(instantiated, "cudaGraphInstantiate");
  }

  // Enqueues (or, while capturing, records) the dense part; see RunDensePart.
  Status RecordDensePart(uint32_t batch_size, bool has_offset) {
    CUDA_RETURN_IF_ERROR(cudaMemsetAsync(row_grads_.data(), 0,
                                         staged_row_capacity_ * sizeof(float), stream_));
    RETURN_IF_ERROR(Forward(Tower::kUser, batch_size));
    RETURN_IF_ERROR(Forward(Tower::kItem, batch_size));
    RETURN_IF_ERROR(SoftmaxLossAndGrads(batch_size, has_offset ? logit_offset_.data() : nullptr));
    RETURN_IF_ERROR(Backward(Tower::kUser, batch_size));
    RETURN_IF_ERROR(Backward(Tower::kItem, batch_size));
    return AdamUpdate();
  }

  Status ReserveTower(Tower tower, uint32_t batch_size) {
    TowerBuffers& buffers = buffers_[Index(tower)];
    if (batch_size <= buffers.batch) return Status::Ok();
    const std::vector<uint32_t>& widths = widths_[Index(tower)];
    const size_t batch = batch_size;
    size_t widest = 0;
    for (uint32_t width : widths) widest = std::max<size_t>(widest, width);
    RETURN_IF_ERROR(Grow(buffers.input, batch * widths[0]));
    for (size_t l = 0; l < buffers.activations.size(); ++l) {
      RETURN_IF_ERROR(Grow(*buffers.activations[l], batch * widths[l + 1]));
    }
    RETURN_IF_ERROR(Grow(buffers.norms, batch));
    RETURN_IF_ERROR(Grow(buffers.normalized, batch * config_.output_dim));
    RETURN_IF_ERROR(Grow(buffers.grad_normalized, batch * config_.output_dim));
    RETURN_IF_ERROR(Grow(buffers.grad_ping, batch * widest));
    RETURN_IF_ERROR(Grow(buffers.grad_pong, batch * widest));
    buffers.batch = batch_size;
    return Status::Ok();
  }

  // The B x B logits, per-row losses and the bias-gradient ones, needed only for training.
  Status ReserveLoss(uint32_t batch_size) {
    if (batch_size <= loss_batch_) return Status::Ok();
    const size_t batch = batch_size;
    RETURN_IF_ERROR(Grow(logits_, batch * batch));
    RETURN_IF_ERROR(Grow(row_loss_, batch));
    RETURN_IF_ERROR(Grow(ones_, batch));
    cuda::FillKernel<<<cuda::BlocksFor(batch), cuda::kThreadsPerBlock, 0, stream_>>>(ones_.data(),
                                                                                     batch, 1.0f);
    RETURN_IF_ERROR(cuda::LaunchStatus("FillKernel"));
    loss_batch_ = batch_size;
    return Status::Ok();
  }

  // Stages the slots of `towers` into pinned memory and starts their upload; records each
  // slot's offsets in its tower's buffers and the stretches of used rows in used_row_ranges_.
  // Also sizes the device gradient array to match.
  Status UploadRows(std::initializer_list<std::pair<Tower, const TowerInput*>> towers,
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
                                           floats * sizeof(float), cudaMemcpyHostToDevice,
                                           stream_));
    }
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
    cuda::SoftmaxCrossEntropyKernel<<<cuda::SoftmaxBlocksFor(batch_size), cuda::kThreadsPerBlock,
                                      0, stream_>>>(logits, batch_size, logit_offset,
                                                    row_loss_.data());
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

  // Adam on all dense weights, with the constants TrainStep uploaded to adam_step_.
  Status AdamUpdate() {
    cuda::AdamKernel<<<cuda::BlocksFor(parameter_count_), cuda::kThreadsPerBlock, 0, stream_>>>(
        parameters_.data(), gradients_.data(), first_moment_.data(), second_moment_.data(),
        parameter_count_, adam_step_.data());
    return cuda::LaunchStatus("AdamKernel");
  }

  // `source` (parameters_ or gradients_, laid out by layers_) as host layers.
  // Copies `layers` (shapes already checked) into `target` through the staging buffer and waits.
  Status UploadLayers(const DenseWeights& layers, DeviceArray<float>& target) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));  // the staging buffer is free
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
                                         parameter_count_ * sizeof(float),
                                         cudaMemcpyHostToDevice, stream_));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }

  Result<DenseWeights> DownloadLayers(DeviceArray<float>& source) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(parameter_staging_.data(), source.data(),
                                         parameter_count_ * sizeof(float), cudaMemcpyDeviceToHost,
                                         stream_));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
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

  const ModelConfig config_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  DeviceArray<char> cublas_workspace_;
  cudaEvent_t step_start_ = nullptr, step_stop_ = nullptr;  // around a TrainStep's device work
  CapturedStep captured_[2];          // the dense part without / with a logit offset
  uint32_t previous_train_batch_ = 0;  // batch size of the last TrainStep (0: none yet)
  size_t previous_slot_rows_ = 0;      // and its staged_slot_rows_

  std::vector<uint32_t> widths_[2];    // per tower, TowerWidths
  std::vector<LayerSlice> layers_[2];  // per tower, into the flat parameter arrays
  size_t parameter_count_ = 0;
  DeviceArray<float> parameters_, gradients_, first_moment_, second_moment_;
  PinnedArray<float> parameter_staging_;
  uint64_t step_ = 0;  // Adam steps taken since the weights were set
  DeviceArray<cuda::AdamStep> adam_step_;  // this step's Adam constants
  PinnedArray<cuda::AdamStep> adam_step_staging_;

  TowerBuffers buffers_[2];
  uint32_t loss_batch_ = 0;  // the batch logits_, row_loss_ and ones_ are sized for
  DeviceArray<float> logits_, row_loss_, ones_, loss_;
  DeviceArray<float> logit_offset_;           // B, when the item input carries one
  PinnedArray<float> logit_offset_staging_;
  PinnedArray<float> loss_staging_;

  // This call's unique rows of every slot, each slot in its fixed region (see StagedSlot), and
  // their gradients (same layout). used_row_ranges_: (offset, floats) stretches holding rows.
  size_t staged_row_capacity_ = 0;
  size_t staged_slot_rows_ = 0;  // rows of each slot's region (see StagedSlot)
  std::vector<std::pair<size_t, size_t>> used_row_ranges_;
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
