// The gather and scatter-add ops of gather_ops.h: their kernels, argument checks and launches.
#include "trainer/cuda/gather_ops.h"

#include <cstddef>

#include "trainer/cuda/launch.cuh"
#include "trainer/cuda/op_checks.h"

namespace ember::trainer::cuda {
namespace {

// input[b, slot_offset + d] = rows[inverse[b], d] for b < batch, d < dim.
__global__ void GatherSlotRowsKernel(const float* rows, const uint32_t* inverse, uint32_t batch,
                                     uint32_t dim, uint32_t input_width, uint32_t slot_offset,
                                     float* input) {
  const size_t total = size_t{batch} * dim;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total;
       i += size_t{gridDim.x} * blockDim.x) {
    const size_t b = i / dim, d = i % dim;
    input[b * input_width + slot_offset + d] = rows[size_t{inverse[b]} * dim + d];
  }
}

// unique_grads[inverse[b], d] += grad_input[b, slot_offset + d]; unique_grads starts zeroed.
__global__ void ScatterAddSlotGradsKernel(const float* grad_input, const uint32_t* inverse,
                                          uint32_t batch, uint32_t dim, uint32_t input_width,
                                          uint32_t slot_offset, float* unique_grads) {
  const size_t total = size_t{batch} * dim;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total;
       i += size_t{gridDim.x} * blockDim.x) {
    const size_t b = i / dim, d = i % dim;
    atomicAdd(&unique_grads[size_t{inverse[b]} * dim + d],
              grad_input[b * input_width + slot_offset + d]);
  }
}

// The checks both ops make of their slot: the columns lie inside the input.
OpChecks CheckSlot(const char* op, const SlotColumns& slot) {
  OpChecks checks(op);
  checks.Pointer(slot.inverse, "inverse")
      .NonZero(slot.dim, "dim")
      .AtMost(uint64_t{slot.slot_offset} + slot.dim, slot.input_width, "slot_offset + dim");
  return checks;
}

// One thread per element of the slot's batch x dim block (grid-stride beyond the block cap).
unsigned SlotBlocks(const SlotColumns& slot) { return BlocksFor(size_t{slot.batch} * slot.dim); }

}  // namespace

Status GatherSlotRows::CanImplement() const {
  return CheckSlot("GatherSlotRows", slot).Pointers(rows, "rows", input, "input").status();
}

Status GatherSlotRows::Run(cudaStream_t stream) const {
  return CheckAndLaunch(*this, GatherSlotRowsKernel, "GatherSlotRowsKernel", SlotBlocks(slot),
                        stream, rows, slot.inverse, slot.batch, slot.dim, slot.input_width,
                        slot.slot_offset, input);
}

Status ScatterAddSlotGrads::CanImplement() const {
  return CheckSlot("ScatterAddSlotGrads", slot)
      .Pointers(grad_input, "grad_input", unique_grads, "unique_grads")
      .status();
}

Status ScatterAddSlotGrads::Run(cudaStream_t stream) const {
  return CheckAndLaunch(*this, ScatterAddSlotGradsKernel, "ScatterAddSlotGradsKernel",
                        SlotBlocks(slot), stream, grad_input, slot.inverse, slot.batch, slot.dim,
                        slot.input_width, slot.slot_offset, unique_grads);
}

}  // namespace ember::trainer::cuda
