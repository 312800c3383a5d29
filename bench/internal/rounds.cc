// Rounds: the interleaving of ember and raw traffic, and the figures from it.
#include "bench/internal/rounds.h"

#include <algorithm>
#include <string_view>

#include "bench/internal/key_batches.h"
#include "bench/internal/process_usage.h"
#include "common/thread_name.h"

namespace ember::bench {
namespace {

// What round `round` of config.rounds may send of each operation, on each side: an even share of
// the requests per client and of the time limit.
PhaseLimits RoundLimits(const BenchOptions& config, uint32_t round) {
  return {.requests_per_client = ShareStart(config.requests, round + 1, config.rounds) -
                                 ShareStart(config.requests, round, config.rounds),
          .seconds = config.seconds / config.rounds};
}

// Runs one side's share of a round and adds it to that side's total.
Result<PhaseOutcome> RunRoundSide(Traffic& traffic, const PhaseLimits& limits,
                                  PhaseOutcome* total) {
  PhaseOutcome round = RunPhase(traffic, limits);
  RETURN_IF_ERROR(round.status);
  total->requests += round.requests;
  total->keys += round.keys;
  total->seconds += round.seconds;
  total->latencies_ms.insert(total->latencies_ms.end(), round.latencies_ms.begin(),
                             round.latencies_ms.end());
  return round;
}

// The threads among `threads` whose name starts with `prefix`.
std::vector<pid_t> ThreadsNamed(const std::vector<pid_t>& threads, std::string_view prefix) {
  std::vector<pid_t> named;
  for (pid_t id : threads) {
    if (ThreadNameOf(id).starts_with(prefix)) named.push_back(id);
  }
  return named;
}

// The raw share of a round, with the echo peers' CPU time (their ZeroMQ I/O threads' apart) and
// the rest of the process's.
Result<PhaseOutcome> RunRawSide(const PhaseLimits& limits, OperationRounds* op) {
  const std::vector<pid_t> io = ThreadsNamed(op->raw_thread_ids, "ZMQbg/IO");
  const double peers_before = CpuSecondsOf(op->raw_thread_ids);
  const double io_before = CpuSecondsOf(io);
  const double process_before = ProcessCpuSeconds();
  ASSIGN_OR_RETURN(PhaseOutcome raw, RunRoundSide(op->raw, limits, &op->raw_total));
  const double peers = CpuSecondsOf(op->raw_thread_ids) - peers_before;
  op->raw_server_cpu_seconds += peers;
  op->raw_io_cpu_seconds += CpuSecondsOf(io) - io_before;
  op->raw_client_cpu_seconds += ProcessCpuSeconds() - process_before - peers;
  return raw;
}

// Round `round` of one operation: ember's share, then the same share to the echo peers right
// after, and their ratio. With the cluster in this process, adds its server threads' CPU time
// over ember's share.
Status RunOperationRound(const BenchOptions& config, uint32_t round,
                         const local::LocalCluster* cluster, OperationRounds* op) {
  const PhaseLimits limits = RoundLimits(config, round);
  const std::vector<pid_t> servers = cluster ? cluster->server_thread_ids() : std::vector<pid_t>{};
  // The threads that serve requests: the workers, and the router, which serves a server's pulls
  // and pushes itself when it has one worker.
  std::vector<pid_t> workers = ThreadsNamed(servers, "ps-worker");
  for (pid_t router : ThreadsNamed(servers, "ps-router")) workers.push_back(router);
  const double server_before = CpuSecondsOf(servers);
  const double worker_before = CpuSecondsOf(workers);
  const double process_before = ProcessCpuSeconds();
  ASSIGN_OR_RETURN(PhaseOutcome ember, RunRoundSide(op->ember, limits, &op->ember_total));
  if (cluster) {
    const double server = CpuSecondsOf(servers) - server_before;
    op->server_cpu_seconds += server;
    op->server_worker_cpu_seconds += CpuSecondsOf(workers) - worker_before;
    op->client_cpu_seconds += ProcessCpuSeconds() - process_before - server;
  }
  ASSIGN_OR_RETURN(PhaseOutcome raw, RunRawSide(limits, op));
  const double raw_keys_per_second = KeysPerSecond(raw);
  op->ratios.push_back(raw_keys_per_second > 0 ? KeysPerSecond(ember) / raw_keys_per_second : 0);
  return Status::Ok();
}

// Payload of one key: its row (pull) or gradient (push), plus the key itself.
double PayloadBytesPerKey(uint32_t dim) { return dim * sizeof(float) + sizeof(uint64_t); }

}  // namespace

Status RunRounds(const BenchOptions& config, const local::LocalCluster* cluster,
                 OperationRounds* pull, OperationRounds* push) {
  for (OperationRounds* op : {pull, push}) {
    RETURN_IF_ERROR(WarmUp(op->ember, config.seconds));
    RETURN_IF_ERROR(WarmUp(op->raw, config.seconds));
  }
  for (uint32_t round = 0; round < config.rounds; ++round) {
    for (OperationRounds* op : {pull, push}) {
      RETURN_IF_ERROR(RunOperationRound(config, round, cluster, op));
    }
  }
  return Status::Ok();
}

void FillOperation(const OperationRounds& rounds, uint32_t dim, bool cpu_known,
                   OperationFigures* op) {
  const PhaseOutcome& ember = rounds.ember_total;
  op->requests = ember.requests;
  op->keys = ember.keys;
  op->seconds = ember.seconds;
  op->keys_per_second = KeysPerSecond(ember);
  op->gb_per_second = op->keys_per_second * PayloadBytesPerKey(dim) / 1e9;
  std::vector<double> sorted = ember.latencies_ms;
  std::sort(sorted.begin(), sorted.end());
  op->latency_p50_ms = Percentile(sorted, 0.50);
  op->latency_p99_ms = Percentile(sorted, 0.99);
  op->latency_p999_ms = Percentile(sorted, 0.999);
  if (cpu_known && ember.keys > 0) {
    op->server_cpu_seconds_per_million_keys = rounds.server_cpu_seconds / (ember.keys / 1e6);
    op->client_cpu_seconds_per_million_keys = rounds.client_cpu_seconds / (ember.keys / 1e6);
    op->server_worker_cpu_seconds_per_million_keys =
        rounds.server_worker_cpu_seconds / (ember.keys / 1e6);
  }
  op->raw_keys_per_second = KeysPerSecond(rounds.raw_total);
  if (!rounds.raw_thread_ids.empty() && rounds.raw_total.keys > 0) {
    const double million_keys = rounds.raw_total.keys / 1e6;
    op->raw_server_cpu_seconds_per_million_keys = rounds.raw_server_cpu_seconds / million_keys;
    op->raw_io_cpu_seconds_per_million_keys = rounds.raw_io_cpu_seconds / million_keys;
    op->raw_client_cpu_seconds_per_million_keys = rounds.raw_client_cpu_seconds / million_keys;
  }
  op->raw_gb_per_second = op->raw_keys_per_second * PayloadBytesPerKey(dim) / 1e9;
  op->ratio_rounds = rounds.ratios;
  op->ratio_to_raw = Median(rounds.ratios);
}

}  // namespace ember::bench
