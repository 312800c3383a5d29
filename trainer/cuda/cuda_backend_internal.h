// CudaBackend: the two-tower model on one GPU, the same maths as trainer/cpu_backend.cc. Private
// to trainer/cuda; everyone else makes one through trainer/cuda_backend.h.
//
// Matrix products are cuBLAS SGEMMs (gemm.h), in full FP32 unless the config asks for TF32; the
// rest are the ops in this folder. Everything runs on one stream. Per step, every slot's unique
// rows and inverse indices go up through pinned staging buffers, and the unique-row gradients and
// the loss come back the same way; the dense weights and Adam state stay on the device.
//
// A training step is: uploads, the dense part (gather, forward, loss, backward, scatter-add into
// unique-row gradients, Adam), downloads, and the one host synchronisation that waits for the
// gradients. The dense part launches the same kernels with the same arguments on every step of
// one batch size: each slot owns a fixed region of the row and gradient arrays, sized for the
// worst case of batch_size unique rows, and Adam reads its per-step constants from device memory.
// So once a batch size repeats, the dense part is captured into a CUDA graph and replayed.
//
// The class is split by topic: cuda_backend.cu sets it up and moves weights, state and rows
// between host and device; cuda_backend_step.cu runs a step (and Encode) on the device.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "trainer/backend.h"
#include "trainer/cuda/adam_op.h"
#include "trainer/cuda/cuda_handles.h"
#include "trainer/cuda/device_buffer.cuh"
#include "trainer/cuda/device_context.h"
#include "trainer/cuda/gather_ops.h"

namespace ember::trainer::cuda {

// Norms below this are treated as this, so a zero output does not divide by zero.
constexpr float kMinNorm = 1e-12f;

// An instantiated capture of the dense part of a step, valid for one batch size and slot size.
struct CapturedStep {
  CudaGraphExec exec;
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
  DeviceArray<float> input;                     // B x widths[0]
  std::vector<DeviceArray<float>> activations;  // per layer, B x widths[l+1]
  DeviceArray<float> norms;                     // B
  DeviceArray<float> normalized;                // B x output_dim
  DeviceArray<float> grad_normalized;           // B x output_dim
  DeviceArray<float> grad_ping, grad_pong;      // B x widest layer
  std::vector<StagedSlot> slots;                // this call's slots
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const ModelConfig& config) : config_(config) {}

  // On the current device: creates the stream, cuBLAS handle and buffers, and sets `initial`.
  Status Init(const DenseWeights& initial);

  std::string_view name() const override { return "cuda"; }
  Result<StepStats> TrainStep(uint32_t batch_size, const TowerInput& user,
                              const TowerInput& item) override;
  Status Encode(Tower tower, uint32_t batch_size, const TowerInput& input,
                std::span<float> out) override;
  DenseWeights GetWeights() override;
  Result<DenseWeights> DenseGradients() override;
  Status SetWeights(const DenseWeights& weights) override;
  Result<DenseState> GetState() override;
  Status SetState(const DenseState& state) override;

 private:
  static int Index(Tower tower) { return static_cast<int>(tower); }
  cudaStream_t stream() const { return context_.stream(); }

  // --- cuda_backend.cu: buffers, uploads and downloads.

  // Reserve for device arrays a captured graph may point into: reallocating one invalidates the
  // graphs, so they are dropped and captured again.
  template <typename T>
  Status Grow(DeviceArray<T>& array, size_t count) {
    if (count > array.capacity()) DropGraphs();
    return array.Reserve(count);
  }
  void DropGraphs();
  Status ReserveTower(Tower tower, uint32_t batch_size);
  // The B x B logits, per-row losses and the bias-gradient ones, needed only for training.
  Status ReserveLoss(uint32_t batch_size);
  // Stages the slots of `towers` into pinned memory and starts their upload; records each
  // slot's offsets in its tower's buffers and the stretches of used rows in used_row_ranges_.
  // Also sizes the device gradient array to match.
  Status UploadRows(std::initializer_list<std::pair<Tower, const TowerInput*>> towers,
                    uint32_t batch_size);
  // Copies `layers` (shapes already checked) into `target` through the staging buffer and waits.
  Status UploadLayers(const DenseWeights& layers, DeviceArray<float>& target);
  // `source` (parameters_ or gradients_, laid out by layers_) as host layers.
  Result<DenseWeights> DownloadLayers(DeviceArray<float>& source);

  // --- cuda_backend_step.cu: the device work of a step.

  // The dense part of a training step, from uploaded rows, inverse indices, logit offset (when
  // `has_offset`) and Adam constants to unique-row gradients in row_grads_, the loss in loss_ and
  // updated weights. Replays a captured graph when there is one for this batch size, captures
  // one when the batch size repeats the previous step's, and otherwise launches directly.
  Status RunDensePart(uint32_t batch_size, bool has_offset);
  Status CaptureDensePart(uint32_t batch_size, bool has_offset, CudaGraphExec* exec);
  // Enqueues (or, while capturing, records) the dense part; see RunDensePart.
  Status RecordDensePart(uint32_t batch_size, bool has_offset);
  // Slot `s` of `tower`'s staged slots, as the gather and scatter-add ops see it.
  SlotColumns SlotColumnsOf(Tower tower, size_t s, uint32_t batch_size) const;
  // Fills the tower's buffers up to `normalized` (and `norms`) from the uploaded rows.
  Status Forward(Tower tower, uint32_t batch_size);
  // From both towers' `normalized`: the mean loss into loss_ and each tower's grad_normalized.
  Status SoftmaxLossAndGrads(uint32_t batch_size, const float* logit_offset);
  // From the tower's grad_normalized: the tower's slice of gradients_ and, scatter-added, its
  // slots' unique-row gradients in row_grads_ (zeroed beforehand by the caller).
  Status Backward(Tower tower, uint32_t batch_size);

  const ModelConfig config_;
  // Members are released in reverse order: the graph instances (declared last) before the arrays
  // they point into, and the context's cuBLAS handle and stream after everything else.
  DeviceContext context_;
  CudaEvent step_start_, step_stop_;   // around a TrainStep's device work
  uint32_t previous_train_batch_ = 0;  // batch size of the last TrainStep (0: none yet)
  size_t previous_slot_rows_ = 0;      // and its staged_slot_rows_

  std::vector<uint32_t> widths_[2];    // per tower, TowerWidths
  std::vector<LayerSlice> layers_[2];  // per tower, into the flat parameter arrays
  size_t parameter_count_ = 0;
  DeviceArray<float> parameters_, gradients_, first_moment_, second_moment_;
  PinnedArray<float> parameter_staging_;
  uint64_t step_ = 0;                // Adam steps taken since the weights were set
  DeviceArray<AdamStep> adam_step_;  // this step's Adam constants
  PinnedArray<AdamStep> adam_step_staging_;

  TowerBuffers buffers_[2];
  uint32_t loss_batch_ = 0;  // the batch logits_, row_loss_ and ones_ are sized for
  DeviceArray<float> logits_, row_loss_, ones_, loss_;
  DeviceArray<float> logit_offset_;  // B, when the item input carries one
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

  CapturedStep captured_[2];  // the dense part without / with a logit offset
};

}  // namespace ember::trainer::cuda
