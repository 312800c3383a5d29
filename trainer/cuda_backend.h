// The CUDA backend: the two-tower model on one GPU with cuBLAS (plain C++ declarations; the
// definitions are in trainer/cuda/ and exist only when EMBER_HAVE_CUDA is defined).
#pragma once

#include <memory>

#include "common/status.h"
#include "trainer/backend.h"
#include "trainer/dense_weights.h"
#include "trainer/model_config.h"

namespace ember::trainer {

// True when the CUDA runtime reports at least one usable device.
bool CudaDevicePresent();

// Uses the current CUDA device; trains the in-batch softmax only (FailedPrecondition for another
// model.loss). Failures (no device, out of memory, invalid config or weight
// shapes, and later any CUDA or cuBLAS error in a call) are returned as Status, never aborted on;
// GetWeights, which has no Status, returns an empty DenseWeights when the device has failed.
Result<std::unique_ptr<Backend>> MakeCudaBackend(const ModelConfig& config, DenseWeights initial);

}  // namespace ember::trainer
