// The memory limit a server's per-key work is measured against: a random gather of rows from a
// plain array as large as the table, with the benchmark's own keys, one thread, no index and no
// locks. Each key picks a row by its hash; the first `copy_floats` floats of the row (what a pull
// copies out) go to an output buffer in request order. Measured with software prefetch (rows
// requested a fixed distance ahead of their copy) and without. Private to bench/.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/bench_report.h"
#include "bench/internal/key_batches.h"
#include "common/status.h"

namespace ember::bench {

// Gathers from `rows` rows of `row_floats` floats, `copy_floats` of each, over `batches` in turn,
// alternating the two ways in `rounds` rounds of about `seconds` each way in all. Fails when
// `rows` times the row does not fit in memory.
Result<GatherFigures> MeasureRowGather(uint64_t rows, uint32_t row_floats, uint32_t copy_floats,
                                       const std::vector<KeyBatch>& batches, double seconds,
                                       uint32_t rounds);

}  // namespace ember::bench
