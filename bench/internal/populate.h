// Creating a benchmark's rows before it is timed: the most popular keys of its Zipf law, pulled
// by the request drivers in parallel. Private to bench/.
#pragma once

#include <memory>
#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_report.h"
#include "bench/internal/request_driver.h"
#include "common/status.h"

namespace ember::bench {

// Creates the rows of the config.populate most popular keys by pulling them, the drivers in
// parallel, each a contiguous range of ranks in requests of config.keys_per_request keys.
Result<PopulateFigures> Populate(const BenchOptions& config,
                                 std::vector<std::unique_ptr<RequestDriver>>& pull_drivers);

}  // namespace ember::bench
