// Row gather: see row_gather.h.
#include "bench/internal/row_gather.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "bench/internal/phase.h"
#include "bench/internal/row_passes.h"
#include "common/hash.h"
#include "embedding/slab_arena.h"

namespace ember::bench {
namespace {

// The row a key picks: its hash scaled to [0, rows).
uint64_t RowOf(uint64_t key, uint64_t rows) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(Mix64(key)) * rows) >> 64);
}

struct GatherArray {
  const float* rows = nullptr;
  uint64_t count = 0;
  uint32_t row_floats = 0;
  uint32_t copy_floats = 0;

  const float* RowFor(uint64_t key) const { return rows + RowOf(key, count) * row_floats; }
};

// Gathers batch after batch (from *next_batch on) for about `seconds`: nanoseconds per row.
template <bool kPrefetch>
double TimeGather(const GatherArray& array, const std::vector<KeyBatch>& batches, double seconds,
                  std::vector<float>& out, size_t* next_batch) {
  return NanosecondsPerKey(
      batches.size(), seconds, next_batch, [&](size_t b) { return batches[b].size(); },
      [&](size_t b) {
        const KeyBatch& keys = batches[b];
        GatherRows<kPrefetch>(
            keys.size(), [&](size_t i) { return array.RowFor(keys[i]); }, array.copy_floats,
            out.data());
      });
}

}  // namespace

Result<GatherFigures> MeasureRowGather(uint64_t rows, uint32_t row_floats, uint32_t copy_floats,
                                       const std::vector<KeyBatch>& batches, double seconds,
                                       uint32_t rounds) {
  if (rows == 0 || batches.empty() || rounds == 0 || copy_floats > row_floats) {
    return InvalidArgument("row gather: needs rows, key batches, rounds and a copy within a row");
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
  std::memset(memory, 0x3c, bytes);  // every page resident, as a table's rows are
  const GatherArray array{memory, rows, row_floats, copy_floats};
  size_t longest = 0;
  for (const KeyBatch& keys : batches) longest = std::max(longest, keys.size());
  std::vector<float> out(longest * copy_floats);
  size_t next_batch = 0;
  std::vector<double> prefetched, plain;
  const double share = seconds / 2 / rounds;
  for (uint32_t round = 0; round < rounds; ++round) {
    prefetched.push_back(TimeGather<true>(array, batches, share, out, &next_batch));
    plain.push_back(TimeGather<false>(array, batches, share, out, &next_batch));
  }
  static volatile float sink;  // the copies are used: none may be left out
  sink = out[out.size() / 2];
  (void)sink;
  arena.Free(memory, bytes);
  GatherFigures figures;
  figures.rows = rows;
  figures.row_bytes = row_floats * sizeof(float);
  figures.copy_bytes = copy_floats * sizeof(float);
  figures.ns_per_row = Median(prefetched);
  figures.ns_per_row_plain = Median(plain);
  return figures;
}

}  // namespace ember::bench
