// Row gather: see row_gather.h.
#include "bench/internal/row_gather.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <span>
#include <string>

#include "bench/internal/phase.h"
#include "common/hash.h"
#include "embedding/slab_arena.h"

namespace ember::bench {
namespace {

using Clock = std::chrono::steady_clock;

// How many keys ahead of its copy a row is prefetched: far enough to cover a DRAM access at the
// copy rate of a few nanoseconds per line.
constexpr size_t kPrefetchKeysAhead = 16;
// The update's distance: half as far, as the table's own pipeline prefetches rows (a stored row
// is twice a pull's lines; 16 rows ahead would ask for more lines than a core keeps in flight).
constexpr size_t kUpdatePrefetchKeysAhead = 8;

// The row a key picks: its hash scaled to [0, rows).
uint64_t RowOf(uint64_t key, uint64_t rows) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(Mix64(key)) * rows) >> 64);
}

struct GatherArray {
  float* rows = nullptr;
  uint64_t count = 0;
  uint32_t row_floats = 0;
  uint32_t copy_floats = 0;

  float* RowFor(uint64_t key) const { return rows + RowOf(key, count) * row_floats; }
};

// Requests the `bytes` bytes of `row` (for writing when kWrite) ahead of their use.
template <bool kWrite>
void PrefetchBytes(const float* row, size_t bytes) {
  const char* at = reinterpret_cast<const char*>(row);
  for (size_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(at + offset, kWrite);
}

template <bool kPrefetch>
void GatherBatch(const GatherArray& array, const KeyBatch& keys, float* out) {
  const size_t copy_bytes = size_t{array.copy_floats} * sizeof(float);
  for (size_t i = 0; i < keys.size(); ++i) {
    if constexpr (kPrefetch) {
      if (i + kPrefetchKeysAhead < keys.size()) {
        PrefetchBytes<false>(array.RowFor(keys[i + kPrefetchKeysAhead]), copy_bytes);
      }
    }
    std::memcpy(out + i * array.copy_floats, array.RowFor(keys[i]), copy_bytes);
  }
}

// What a push must do at least: each key's whole row, weights and state, updated in place by the
// optimizer with the key's gradient (grads, in request order), the rows prefetched for writing.
void UpdateBatch(const GatherArray& array, const embedding::RowOptimizer& optimizer,
                 const KeyBatch& keys, const float* grads) {
  const uint32_t dim = optimizer.dim();
  const size_t row_bytes = size_t{array.row_floats} * sizeof(float);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i + kUpdatePrefetchKeysAhead < keys.size()) {
      PrefetchBytes<true>(array.RowFor(keys[i + kUpdatePrefetchKeysAhead]), row_bytes);
    }
    float* row = array.RowFor(keys[i]);
    optimizer.Apply(std::span<float>(row, dim),
                    std::span<float>(row + dim, optimizer.state_floats()),
                    std::span<const float>(grads + i * dim, dim));
  }
}

// Runs `batch(keys)` batch after batch (from *next_batch on) for about `seconds`: nanoseconds per
// key.
template <typename Batch>
double TimeBatches(const std::vector<KeyBatch>& batches, double seconds, size_t* next_batch,
                   Batch&& batch) {
  const auto start = Clock::now();
  const auto stop = start + std::chrono::duration<double>(seconds);
  uint64_t rows = 0;
  do {
    const KeyBatch& keys = batches[(*next_batch)++ % batches.size()];
    batch(keys);
    rows += keys.size();
  } while (Clock::now() < stop);
  const double elapsed = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
  return rows > 0 ? elapsed / static_cast<double>(rows) : 0;
}

}  // namespace

Result<GatherFigures> MeasureRowGather(uint64_t rows, const embedding::RowOptimizer& optimizer,
                                       const std::vector<KeyBatch>& batches, double seconds,
                                       uint32_t rounds) {
  const uint32_t copy_floats = optimizer.dim();
  const uint32_t row_floats = copy_floats + optimizer.state_floats();
  if (rows == 0 || batches.empty() || rounds == 0) {
    return InvalidArgument("row gather: needs rows, key batches and rounds");
  }
  const size_t bytes = rows * row_floats * sizeof(float);
  embedding::SlabArena& arena = embedding::SlabArena::Shared();
  float* memory = nullptr;
  try {
    memory = static_cast<float*>(arena.Allocate(bytes));
  } catch (const std::bad_alloc&) {
    return ResourceExhausted("row gather: no memory for " + std::to_string(rows) + " rows of " +
                             std::to_string(row_floats * sizeof(float)) + " bytes");
  }
  // Every page resident, as a table's rows are; 0x3c bytes are the float 0.0115, a weight, state
  // and gradient that keeps every optimizer's arithmetic on normal numbers.
  std::memset(memory, 0x3c, bytes);
  const GatherArray array{memory, rows, row_floats, copy_floats};
  size_t longest = 0;
  for (const KeyBatch& keys : batches) longest = std::max(longest, keys.size());
  std::vector<float> out(longest * copy_floats);
  std::vector<float> grads(longest * copy_floats, 0.0115f);
  size_t next_batch = 0;
  std::vector<double> prefetched, plain, updated;
  const double share = seconds / 3 / rounds;
  for (uint32_t round = 0; round < rounds; ++round) {
    prefetched.push_back(TimeBatches(batches, share, &next_batch, [&](const KeyBatch& keys) {
      GatherBatch<true>(array, keys, out.data());
    }));
    plain.push_back(TimeBatches(batches, share, &next_batch, [&](const KeyBatch& keys) {
      GatherBatch<false>(array, keys, out.data());
    }));
    updated.push_back(TimeBatches(batches, share, &next_batch, [&](const KeyBatch& keys) {
      UpdateBatch(array, optimizer, keys, grads.data());
    }));
  }
  static volatile float sink;  // the copies and updates are used: none may be left out
  sink = out[out.size() / 2] + memory[bytes / sizeof(float) / 2];
  arena.Free(memory, bytes);
  GatherFigures figures;
  figures.rows = rows;
  figures.row_bytes = row_floats * sizeof(float);
  figures.copy_bytes = copy_floats * sizeof(float);
  figures.ns_per_row = Median(prefetched);
  figures.ns_per_row_plain = Median(plain);
  figures.ns_per_update = Median(updated);
  return figures;
}

}  // namespace ember::bench
