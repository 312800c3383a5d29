// The memory limit a server's per-key work is measured against: a random gather of rows from a
// plain array as large as the table, with the benchmark's own keys, one thread, no index and no
// locks. Each key picks a row by its hash; the first `copy_floats` floats of the row (what a pull
// copies out) go to an output buffer in request order. Measured with software prefetch (rows
// requested a fixed distance ahead of their copy) and without. The push's counterpart, the update,
// applies the table's optimizer to each key's whole row (weights and state) in place with a
// gradient read in request order, with the same prefetch. Private to bench/.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/bench_report.h"
#include "bench/internal/key_batches.h"
#include "common/status.h"
#include "embedding/optimizer.h"

namespace ember::bench {

// Gathers from `rows` rows of a table with `optimizer` (its dim floats of each row, rows as wide
// as the weights with the optimizer's state), and updates them, over `batches` in turn: the three
// ways (gather with prefetch, without, update) in turn in `rounds` rounds, about `seconds` in all.
// Fails when the rows do not fit in memory.
Result<GatherFigures> MeasureRowGather(uint64_t rows, const embedding::RowOptimizer& optimizer,
                                       const std::vector<KeyBatch>& batches, double seconds,
                                       uint32_t rounds);

}  // namespace ember::bench
