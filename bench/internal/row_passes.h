// The passes over rows that the memory-limit measures share (row_gather.cc, table_rows.cc): a
// pull's copy of each key's row to an output in request order, an update of each key's row by the
// table's optimizer, each with software prefetch a fixed number of keys ahead, and the timing of
// batch after batch. A pass finds a key's row with `row_at(i)`, for the i-th key of the batch.
// Private to bench/.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "bench/internal/key_batches.h"
#include "embedding/optimizer.h"

namespace ember::bench {

// How many keys ahead of its copy a row is prefetched: far enough to cover a DRAM access at the
// copy rate of a few nanoseconds per line.
inline constexpr size_t kGatherKeysAhead = 16;
// The update's distance: half as far, as the table's own pipeline prefetches rows (a stored row
// is twice a pull's lines; 16 rows ahead would ask for more lines than a core keeps in flight).
inline constexpr size_t kUpdateKeysAhead = 8;

// Requests the `bytes` bytes at `row` (for writing when kWrite) ahead of their use.
template <bool kWrite>
void PrefetchBytes(const float* row, size_t bytes) {
  const char* at = reinterpret_cast<const char*>(row);
  for (size_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(at + offset, kWrite);
}

// Copies the first `copy_floats` floats of the rows of keys [0, keys) to out, in key order.
template <bool kPrefetch, typename RowAt>
void GatherRows(size_t keys, RowAt&& row_at, uint32_t copy_floats, float* out) {
  const size_t copy_bytes = size_t{copy_floats} * sizeof(float);
  for (size_t i = 0; i < keys; ++i) {
    if constexpr (kPrefetch) {
      if (i + kGatherKeysAhead < keys)
        PrefetchBytes<false>(row_at(i + kGatherKeysAhead), copy_bytes);
    }
    std::memcpy(out + i * copy_floats, row_at(i), copy_bytes);
  }
}

// One row, weights and then state, updated in place by `optimizer` with `grad` (dim floats).
inline void UpdateRow(const embedding::RowOptimizer& optimizer, float* row, const float* grad) {
  const uint32_t dim = optimizer.dim();
  optimizer.Apply(std::span<float>(row, dim), std::span<float>(row + dim, optimizer.state_floats()),
                  std::span<const float>(grad, dim));
}

// What a push must do at least: each key's whole row, weights and then state, updated in place by
// `optimizer` with the key's gradient (grads, in key order), the rows prefetched for writing.
template <typename RowAt>
void UpdateRows(size_t keys, RowAt&& row_at, const embedding::RowOptimizer& optimizer,
                const float* grads) {
  const uint32_t dim = optimizer.dim();
  const size_t row_bytes = size_t{dim + optimizer.state_floats()} * sizeof(float);
  for (size_t i = 0; i < keys; ++i) {
    if (i + kUpdateKeysAhead < keys) PrefetchBytes<true>(row_at(i + kUpdateKeysAhead), row_bytes);
    UpdateRow(optimizer, row_at(i), grads + i * dim);
  }
}

// Runs `pass(batch_index)` over batch after batch (from *next_batch on, modulo `batches`) for about
// `seconds`, counting `keys_of(batch_index)` keys each: nanoseconds per key.
template <typename Pass, typename KeysOf>
double NanosecondsPerKey(size_t batches, double seconds, size_t* next_batch, KeysOf&& keys_of,
                         Pass&& pass) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto stop = start + std::chrono::duration<double>(seconds);
  uint64_t keys = 0;
  do {
    const size_t batch = (*next_batch)++ % batches;
    pass(batch);
    keys += keys_of(batch);
  } while (Clock::now() < stop);
  const double elapsed = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  return keys > 0 ? elapsed / static_cast<double>(keys) : 0;
}

}  // namespace ember::bench
