// The softmax cross-entropy op of loss_ops.h: its two kernels, argument checks and launches.
#include "trainer/cuda/loss_ops.h"

#include <cstddef>

#include "trainer/cuda/launch.cuh"
#include "trainer/cuda/op_checks.h"

namespace ember::trainer::cuda {
namespace {

// One block per row b of the row-major logits: row_loss[b] = logsumexp(row) - row[b], and the
// row is overwritten with its gradient of the mean loss, (softmax(row) - onehot(b)) / batch.
// `column_offset` (nullable, `batch` values) is first subtracted from every row's columns.
__global__ void SoftmaxCrossEntropyKernel(float* logits, uint32_t batch, const float* column_offset,
                                          float* row_loss) {
  __shared__ float scratch[kWarpSize];
  __shared__ float positive;
  const float inverse_batch = 1.0f / static_cast<float>(batch);
  for (size_t b = blockIdx.x; b < batch; b += gridDim.x) {
    float* row = logits + b * batch;
    float row_max = -INFINITY;
    for (uint32_t j = threadIdx.x; j < batch; j += blockDim.x) {
      if (column_offset != nullptr) row[j] -= column_offset[j];
      row_max = fmaxf(row_max, row[j]);
      if (j == b) positive = row[j];
    }
    row_max = BlockReduce(row_max, MaxOp{}, -INFINITY, scratch);  // also publishes `positive`
    float sum = 0;
    for (uint32_t j = threadIdx.x; j < batch; j += blockDim.x) {
      const float e = expf(row[j] - row_max);
      row[j] = e;
      sum += e;
    }
    sum = BlockReduce(sum, SumOp{}, 0.0f, scratch);
    if (threadIdx.x == 0) row_loss[b] = logf(sum) + row_max - positive;
    const float scale = inverse_batch / sum;
    for (uint32_t j = threadIdx.x; j < batch; j += blockDim.x) {
      row[j] = row[j] * scale - (j == b ? inverse_batch : 0.0f);
    }
    __syncthreads();  // `positive` is rewritten by the next row
  }
}

// Blocks for SoftmaxCrossEntropyKernel: one per row, capped (the kernel loops over the rest).
unsigned SoftmaxBlocksFor(uint32_t batch) { return batch < 65535u ? batch : 65535u; }

// One block: *mean = sum(row_loss) / count, in a fixed order (deterministic). Launched with
// kThreadsPerBlock threads, a power of two (the tree below halves it).
__global__ void MeanKernel(const float* row_loss, uint32_t count, float* mean) {
  __shared__ double partial[kThreadsPerBlock];
  double sum = 0;
  for (uint32_t i = threadIdx.x; i < count; i += blockDim.x) sum += row_loss[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) *mean = static_cast<float>(partial[0] / count);
}

static_assert((kThreadsPerBlock & (kThreadsPerBlock - 1)) == 0,
              "MeanKernel's tree reduction needs a power-of-two block");

}  // namespace

Status SoftmaxCrossEntropy::CanImplement() const {
  return OpChecks("SoftmaxCrossEntropy")
      .Pointers(logits, "logits", row_loss, "row_loss", mean_loss, "mean_loss")
      .OptionalPointer(column_offset, "column_offset")
      .NonZero(batch, "batch")  // the mean and the gradient divide by it
      .status();
}

Status SoftmaxCrossEntropy::Run(cudaStream_t stream) const {
  RETURN_IF_ERROR(CheckAndLaunch(*this, SoftmaxCrossEntropyKernel, "SoftmaxCrossEntropyKernel",
                                 SoftmaxBlocksFor(batch), stream, logits, batch, column_offset,
                                 row_loss));
  return CheckAndLaunch(*this, MeanKernel, "MeanKernel", 1, stream, row_loss, batch, mean_loss);
}

}  // namespace ember::trainer::cuda
