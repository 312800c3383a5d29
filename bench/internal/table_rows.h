// The table's own rows without the table: the floor under a server's per-key work. The rows the
// benchmark's table holds, created in the same order (rank after rank, as Populate creates them)
// into the same structure (embedding::StripedRows: the same partitions, chunks and arena), each
// batch's rows found before the clock starts. Then, with no index, lock or bookkeeping, on one
// thread: a pull's copy of each key's row to an output in request order, and an update of each
// key's row by the table's optimizer (row_passes.h), with prefetch. The same two passes again with
// each key's row found through the table's index as its requests find them (in its order, grouped
// by stripe, the grouping done beforehand; the index entry and the row prefetched ahead), still
// with no lock: what a server that keeps rows by key adds.
// Private to bench/.
#pragma once

#include <cstdint>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_report.h"
#include "bench/internal/key_batches.h"
#include "common/status.h"
#include "common/table_spec.h"

namespace ember::bench {

// The rows of table `spec` in `partitions` partitions: the `rows` most popular keys of config's
// Zipf law, and any key of `batches` beyond them. The four passes alternate in `rounds` rounds,
// about `seconds` in all. Fails when the rows do not fit in memory.
Result<TableRowsFigures> MeasureTableRows(const BenchOptions& config, const TableSpec& spec,
                                          uint64_t rows, uint32_t partitions,
                                          const std::vector<KeyBatch>& batches, double seconds,
                                          uint32_t rounds);

}  // namespace ember::bench
