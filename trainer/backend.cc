// Backend selection and the input checks every backend shares.
#include "trainer/backend.h"

#include <string>

#include "trainer/cpu_backend.h"
#include "trainer/cuda_backend.h"

namespace ember::trainer {

Result<DenseState> Backend::GetState() {
  return FailedPrecondition("the " + std::string(name()) +
                            " backend cannot save its optimizer state for a checkpoint");
}

Status Backend::SetState(const DenseState&) {
  return FailedPrecondition("the " + std::string(name()) +
                            " backend cannot resume from a checkpoint's optimizer state");
}

bool HasMultiValuedSlots(const TowerInput& input) {
  for (const SlotInput& slot : input.slots) {
    if (!slot.offsets.empty()) return true;
  }
  return false;
}

bool CudaBackendAvailable() {
#if EMBER_HAVE_CUDA
  return CudaDevicePresent();
#else
  return false;
#endif
}

Result<std::unique_ptr<Backend>> MakeBackend(std::string_view kind, const ModelConfig& config) {
  RETURN_IF_ERROR(ValidateModelConfig(config));
  // The CUDA backend trains the in-batch softmax without shared negatives only; `auto` then picks
  // the CPU.
  const bool cuda_loss = config.loss == LossKind::kInBatchSoftmax && !SharesNegatives(config);
  if (kind == "cpu" || (kind == "auto" && (!CudaBackendAvailable() || !cuda_loss))) {
    return MakeCpuBackend(config, InitDenseWeights(config));
  }
  if (kind != "cuda" && kind != "auto") {
    return InvalidArgument("backend '" + std::string(kind) + "' is not one of cpu, cuda, auto");
  }
  if (!cuda_loss) {
    return FailedPrecondition(
        "backend 'cuda' trains the in-batch softmax without shared negatives only; model.loss " +
        std::string(LossName(config.loss)) + " with " + std::to_string(config.negatives) +
        " negatives runs on the 'cpu' backend ('auto' picks it)");
  }
#if EMBER_HAVE_CUDA
  if (!CudaDevicePresent()) {
    return FailedPrecondition(
        "backend 'cuda' was requested but no CUDA device is present; use 'cpu' or 'auto'");
  }
  return MakeCudaBackend(config, InitDenseWeights(config));
#else
  return FailedPrecondition(
      "backend 'cuda' was requested but this build of ember has no CUDA support; use 'cpu' or "
      "'auto'");
#endif
}

Status CheckTowerInput(const ModelConfig& config, Tower tower, uint32_t batch_size,
                       const TowerInput& input, bool check_grads) {
  const char* name = tower == Tower::kUser ? "user" : "item";
  const uint32_t slots = tower == Tower::kUser ? config.user_slots : config.item_slots;
  const size_t dim = config.embedding_dim;
  if (batch_size == 0) return InvalidArgument("batch_size must be > 0");
  if (input.slots.size() != slots) {
    return InvalidArgument(std::string(name) + " tower input has " +
                           std::to_string(input.slots.size()) + " slots but the model has " +
                           std::to_string(slots));
  }
  if (!input.logit_offset.empty()) {
    if (tower != Tower::kItem) return InvalidArgument("logit_offset is for the item tower only");
    if (input.logit_offset.size() != batch_size) {
      return InvalidArgument("item logit_offset has " + std::to_string(input.logit_offset.size()) +
                             " entries but the batch has " + std::to_string(batch_size));
    }
  }
  for (size_t s = 0; s < input.slots.size(); ++s) {
    const SlotInput& slot = input.slots[s];
    const std::string where = std::string(name) + " slot " + std::to_string(s);
    if (slot.unique_rows.size() % dim != 0) {
      return InvalidArgument(where + ": unique_rows has " +
                             std::to_string(slot.unique_rows.size()) +
                             " floats, not a multiple of embedding_dim " + std::to_string(dim));
    }
    const size_t unique = slot.unique_rows.size() / dim;
    if (check_grads && slot.unique_grads.size() != slot.unique_rows.size()) {
      return InvalidArgument(
          where + ": unique_grads has " + std::to_string(slot.unique_grads.size()) +
          " floats but unique_rows has " + std::to_string(slot.unique_rows.size()));
    }
    if (!slot.offsets.empty()) {
      if (slot.offsets.size() != size_t{batch_size} + 1 || slot.offsets.front() != 0 ||
          slot.offsets.back() != slot.inverse.size()) {
        return InvalidArgument(where + ": offsets must be batch_size + 1 = " +
                               std::to_string(size_t{batch_size} + 1) + " entries from 0 to the " +
                               std::to_string(slot.inverse.size()) + " of inverse; they are " +
                               std::to_string(slot.offsets.size()));
      }
      for (size_t b = 0; b < batch_size; ++b) {
        if (slot.offsets[b] > slot.offsets[b + 1]) {
          return InvalidArgument(where + ": offsets[" + std::to_string(b + 1) +
                                 "] is below offsets[" + std::to_string(b) + "]");
        }
      }
    } else if (slot.inverse.size() != batch_size) {
      return InvalidArgument(where + ": inverse has " + std::to_string(slot.inverse.size()) +
                             " entries but the batch has " + std::to_string(batch_size));
    }
    for (size_t b = 0; b < slot.inverse.size(); ++b) {
      if (slot.inverse[b] >= unique) {
        return InvalidArgument(where + ": inverse[" + std::to_string(b) +
                               "] = " + std::to_string(slot.inverse[b]) + " but there are only " +
                               std::to_string(unique) + " unique rows");
      }
    }
  }
  return Status::Ok();
}

Status CheckEncodeInput(const ModelConfig& config, Tower tower, uint32_t batch_size,
                        const TowerInput& input, std::span<const float> out) {
  RETURN_IF_ERROR(CheckTowerInput(config, tower, batch_size, input, false));
  const size_t expected = size_t{batch_size} * config.output_dim;
  if (out.size() != expected) {
    return InvalidArgument("Encode output has " + std::to_string(out.size()) +
                           " floats; expected batch_size * output_dim = " +
                           std::to_string(expected));
  }
  return Status::Ok();
}

}  // namespace ember::trainer
