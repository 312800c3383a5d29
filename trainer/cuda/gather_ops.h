// The ops that move embedding rows between a slot's unique rows and a tower's concatenated input:
// the gather before the first layer, and the scatter-add of the input gradient into unique-row
// gradients after the last backward layer.
//
// Every op in this folder has this shape: a struct of arguments (device pointers and sizes),
// CanImplement() to check them, and Run(stream) to check them the same way, launch on `stream`
// and report the launch error. Ops neither allocate, nor synchronise, nor need a workspace, so
// they can be captured into a CUDA graph. The kernels (and so the launch geometry) live in the
// op's .cu file only. Host declarations: the host compiler can include this header too.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/status.h"

namespace ember::trainer::cuda {

// Where one slot sits in a tower's concatenated input (batch x input_width floats, row-major):
// columns [slot_offset, slot_offset + dim) of row b belong to the slot's unique row inverse[b].
struct SlotColumns {
  const uint32_t* inverse = nullptr;  // batch entries, each below the slot's unique-row count
  uint32_t batch = 0;
  uint32_t dim = 0;  // floats per embedding row
  uint32_t input_width = 0;
  uint32_t slot_offset = 0;
};

// input[b, slot_offset + d] = rows[inverse[b], d] for b < batch, d < dim; the input's other
// columns are left as they are.
struct GatherSlotRows {
  SlotColumns slot;
  const float* rows = nullptr;  // the slot's unique rows, unique x dim
  float* input = nullptr;       // batch x input_width

  Status CanImplement() const;
  Status Run(cudaStream_t stream) const;
};

// unique_grads[inverse[b], d] += grad_input[b, slot_offset + d] for b < batch, d < dim, with
// float atomics (so the order of the sums, and their last bits, can vary from run to run).
struct ScatterAddSlotGrads {
  SlotColumns slot;
  const float* grad_input = nullptr;  // batch x input_width
  float* unique_grads = nullptr;      // unique x dim, accumulated into

  Status CanImplement() const;
  Status Run(cudaStream_t stream) const;
};

}  // namespace ember::trainer::cuda
