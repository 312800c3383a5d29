// Backend: computes one training step of the two-tower model on some device (CPU or CUDA).
//
// The trainer pulls each slot's unique embedding rows from the servers, hands them to the backend
// with each sample's index into them, and pushes back the gradients the backend writes per
// unique row. The backend owns the dense tower weights and trains them with Adam itself; it never
// updates embedding rows. A backend is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "trainer/dense_state.h"
#include "trainer/dense_weights.h"
#include "trainer/model_config.h"

namespace ember::trainer {

// One sparse slot of one tower for one batch.
struct SlotInput {
  std::span<const float> unique_rows;  // U x D pulled rows, row-major
  std::span<const uint32_t> inverse;   // B entries: sample b uses unique row inverse[b]
  std::span<float> unique_grads;       // U x D out: summed gradient per unique row (overwritten)
  // A multi-valued slot: B + 1 offsets, and sample b's input is the mean of the unique rows
  // inverse[offsets[b] .. offsets[b + 1]) (zeros when it has none). Empty: one row per sample.
  std::span<const uint32_t> offsets;
};

struct TowerInput {
  std::vector<SlotInput> slots;  // one per slot of the tower, in slot order
  // Item tower only, optional (empty: none): B values, sample j's value subtracted from every
  // logit of item j. With log-frequencies this is the logQ correction of in-batch sampling.
  std::span<const float> logit_offset;
};

// Whether any slot of `input` is multi-valued (has offsets).
bool HasMultiValuedSlots(const TowerInput& input);

struct StepStats {
  float loss = 0;       // mean loss over the batch's users, before this step's update
  float device_ms = 0;  // time the device was busy with this step (CUDA: events; CPU: wall)
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;  // "cpu" or "cuda"

  // Forward, backward and one Adam update of the dense weights on a batch of `batch_size`
  // (user, item) positive pairs, with the model's loss (ModelConfig::loss): with the in-batch
  // softmax every other item of the batch is a negative for each user; with a sampled loss the
  // item tower holds ItemSamples(config, batch_size) samples, each positive's negatives after
  // the positives, and `item.logit_offset` must be empty. Overwrites unique_grads of every slot
  // with d(mean loss)/d(row), summed over the samples that share the row.
  virtual Result<StepStats> TrainStep(uint32_t batch_size, const TowerInput& user,
                                      const TowerInput& item) = 0;

  // Forward only: writes batch_size x output_dim L2-normalised tower outputs, row-major, to
  // `out`. unique_grads of the input are neither read nor written and may be empty.
  virtual Status Encode(Tower tower, uint32_t batch_size, const TowerInput& input,
                        std::span<float> out) = 0;

  virtual DenseWeights GetWeights() = 0;
  // d(mean loss)/d(weight) of the last TrainStep, shaped like the weights (unspecified before
  // the first step). Lets the dense weights be trained elsewhere (dense tables on the servers).
  virtual Result<DenseWeights> DenseGradients() = 0;
  // Replaces the dense weights (shapes must match the model) and restarts Adam: moments are
  // zeroed and the bias correction starts again from step 1.
  virtual Status SetWeights(const DenseWeights& weights) = 0;

  // The weights with Adam's moments and step count, for checkpoints; SetState resumes from one
  // so the next TrainStep equals the one the saved backend would have taken. A backend that
  // cannot do this answers FailedPrecondition naming itself.
  virtual Result<DenseState> GetState();
  virtual Status SetState(const DenseState& state);
};

// True when ember was built with CUDA and a CUDA device is present.
bool CudaBackendAvailable();

// kind: "cpu", "cuda", or "auto" (cuda when available, else cpu). Dense weights start from
// InitDenseWeights(config). "cuda" without a usable device is FailedPrecondition.
Result<std::unique_ptr<Backend>> MakeBackend(std::string_view kind, const ModelConfig& config);

// For backend implementations: InvalidArgument unless `input` fits `tower` of `config` for
// `batch_size` samples of that tower (slot count, row and gradient span sizes, inverse length and
// range, offsets of multi-valued slots; a logit_offset of one value per sample).
// Gradient spans are only checked when `check_grads`.
Status CheckTowerInput(const ModelConfig& config, Tower tower, uint32_t batch_size,
                       const TowerInput& input, bool check_grads);

// For backend implementations: CheckTowerInput without gradients, plus `out` holding exactly
// batch_size x output_dim floats.
Status CheckEncodeInput(const ModelConfig& config, Tower tower, uint32_t batch_size,
                        const TowerInput& input, std::span<const float> out);

}  // namespace ember::trainer
