// Key deduplication: turns a slot's per-sample keys into unique keys plus an inverse index, so
// each unique row is pulled and pushed once per step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ember::trainer {

struct UniqueKeys {
  std::vector<uint64_t> keys;     // distinct keys in order of first occurrence
  std::vector<uint32_t> inverse;  // inverse[b]: position of the input's b-th key in `keys`
};

// Fills *out from `keys`, reusing out's capacity. Uses a per-thread open-addressing table that is
// kept between calls, so steady-state calls allocate nothing.
void Dedupe(std::span<const uint64_t> keys, UniqueKeys* out);

}  // namespace ember::trainer
