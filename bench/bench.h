// The data-plane benchmark behind `ember bench`: pull and push traffic with Zipf-distributed keys
// from several client threads against a cluster (started in this process, or a running one), and
// right after each share of it the same traffic to bare ZeroMQ echo peers, in interleaved rounds,
// to show how close ember gets to the transport's own limit under the same load on the machine;
// then, for an in-process cluster, the same requests straight against a table (the lookups
// alone). Bounded by options.requests and options.seconds. Blocks until done; one run at a time
// per process is what the figures assume (CPU and memory are the process's).
#pragma once

#include "bench/bench_options.h"
#include "bench/bench_report.h"
#include "common/status.h"

namespace ember::bench {

// Runs the benchmark with `options` (checked first: CheckBenchOptions) and returns its figures;
// report.config holds the options as used (a running cluster's row width, optimizer and server
// count replace the given ones).
Result<BenchReport> RunBench(BenchOptions options);

}  // namespace ember::bench
