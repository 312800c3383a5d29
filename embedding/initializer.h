// Deterministic row initialisation: a new row's values are a pure function of the table's seed,
// the key, the initializer spec and the position in the row.
//
// They never depend on the partition count, on which server creates the row, or on the order in
// which rows are created, so a row created after a migration or a restart matches the row any
// other layout would have created. Value i comes from a counter-based stream:
//   x_i = Mix64(HashCombine(seed, key) + i * 0x9e3779b97f4a7c15)
// turned into a uniform double in [0, 1) for `uniform`. `normal` values come in pairs from the
// same stream by Marsaglia's polar method in float arithmetic, with a logarithm of ember's own
// (initializer.cc), so they are the same bit for bit on every machine. These formulas fix the
// initial values of every saved model: change them only with a new initializer kind.
#pragma once

#include <cstdint>
#include <span>

#include "common/table_spec.h"

namespace ember::embedding {

// Fills `row` from `init`, keyed by (seed, key). Any row length works; value i does not depend on
// the length.
void InitializeRow(const InitializerSpec& init, uint64_t seed, uint64_t key, std::span<float> row);

// Same, with the table's initializer and seed.
inline void InitializeRow(const TableSpec& spec, uint64_t key, std::span<float> row) {
  InitializeRow(spec.initializer, spec.seed, key, row);
}

}  // namespace ember::embedding
