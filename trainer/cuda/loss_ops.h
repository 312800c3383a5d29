// The in-batch softmax cross-entropy over a B x B logit matrix whose diagonal holds the positives:
// per-row losses, their mean, and the logits' gradient. An op in the shape gather_ops.h
// describes; kernels in loss_ops.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace ember::trainer::cuda {

// Per row b of the row-major logits: row_loss[b] = logsumexp(row) - row[b], and the row is
// overwritten with its gradient of the mean loss, (softmax(row) - onehot(b)) / batch. Then
// *mean_loss = the mean of row_loss, summed in a fixed order (deterministic). `column_offset`,
// when not null, is first subtracted from every row's columns. Two kernels, one block per row
// then one block.
struct SoftmaxCrossEntropy {
  float* logits = nullptr;  // batch x batch, in/out
  uint32_t batch = 0;
  const float* column_offset = nullptr;  // batch, or null
  float* row_loss = nullptr;             // batch
  float* mean_loss = nullptr;            // 1

  Status CanImplement() const;
  Status Run(cudaStream_t stream) const;
};

}  // namespace ember::trainer::cuda
