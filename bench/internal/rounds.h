// Rounds of the data-plane benchmark: each operation (pull, push) measured against ember and
// right after against the echo peers under the same traffic, round after round, so that each
// round's ratio compares two halves that saw the same load on the machine. Private to bench/.
#pragma once

#include <sys/types.h>

#include <vector>

#include "bench/bench_options.h"
#include "bench/bench_report.h"
#include "bench/internal/phase.h"
#include "common/status.h"
#include "local/local_cluster.h"

namespace ember::bench {

// One operation (pull or push) measured round by round against ember and against the echo
// peers under the same traffic, with what the rounds have timed so far.
struct OperationRounds {
  Traffic ember;
  Traffic raw;
  PhaseOutcome ember_total;  // all rounds together
  PhaseOutcome raw_total;
  std::vector<pid_t> raw_thread_ids;  // the echo peers' threads
  // CPU time over ember's share of the rounds (in-process cluster only): the server threads, the
  // servers' worker threads among them (the rest is their transport), and the rest of the
  // process (the clients); over the raw share: the echo peers' threads, their ZeroMQ I/O threads
  // among them, and the rest of the process (the raw clients).
  double server_cpu_seconds = 0;
  double server_worker_cpu_seconds = 0;
  double client_cpu_seconds = 0;
  double raw_server_cpu_seconds = 0;
  double raw_io_cpu_seconds = 0;
  double raw_client_cpu_seconds = 0;
  std::vector<double> ratios;  // ember keys/s over raw keys/s, per round
};

// Warms every side up once, then runs config.rounds rounds of ember pull, raw pull, ember push,
// raw push. With the cluster in this process (else null), also measures its server threads' CPU
// time over ember's share of the rounds.
Status RunRounds(const BenchOptions& config, const local::LocalCluster* cluster,
                 OperationRounds* pull, OperationRounds* push);

// The figures of one operation from its rounds: rates and latencies over all rounds together,
// and the median of the rounds' ratios. `cpu_known`: the cluster ran in this process.
void FillOperation(const OperationRounds& rounds, uint32_t dim, bool cpu_known,
                   OperationFigures* op);

}  // namespace ember::bench
