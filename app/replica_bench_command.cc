// `ember bench-replica`: the freshness benchmark (bench/replica_bench.h), printing its account as
// it goes and its figures at the end.
#include <cstdio>

#include "app/commands.h"
#include "bench/replica_bench.h"
#include "common/file_io.h"

namespace ember::app {
namespace {

constexpr CommandText kBenchReplicaCommand = {
    .name = "bench-replica",
    .summary = "measure how fresh a serving replica is and what following costs training",
    .usage = "ember bench-replica [options]",
    .description =
        "Trains a local cluster with the data plane's pull and push load, round by round with no "
        "replica and with a replica following it (alternated), and reports the keys/s of both, "
        "the lag from a push's acknowledgement to its row on the replica (p50, p99), the time of "
        "the replica's first copy and the stream's bytes per changed row.",
};

void AddReplicaBenchFlags(CLI::App* command, ReplicaBenchFlags* flags) {
  bench::ReplicaBenchOptions& o = flags->options;
  AddCount(command, "--servers", &o.servers, "N", "training servers (default 2)");
  AddCount(command, "--partitions", &o.partitions, "N", "partitions (default 64)");
  AddCount(command, "--dim", &o.dim, "N", "row width (default 64)");
  AddValue(command, "--optimizer", &o.optimizer, "NAME", "sgd, adagrad (default), adam or ftrl");
  AddCount(command, "--vocabulary", &o.vocabulary, "N",
           "rows created before timing, and the keys the load draws from (default 200000)");
  AddCount(command, "--keys-per-request", &o.keys_per_request, "N", "(default 4096)");
  AddValue(command, "--seconds", &o.seconds, "S",
           "per operation and side in each round (default 4)");
  AddCount(command, "--rounds", &o.rounds, "N", "rounds; medians of their ratios (default 3)");
  AddCount(command, "--poll-ms", &o.poll_ms, "MS", "the replica's poll interval (default 20)");
  AddCount(command, "--probe-ms", &o.probe_ms, "MS", "between two lag probes (default 20)");
  AddValue(command, "--json", &flags->json, "FILE", "also write the report as JSON");
}

}  // namespace

Command MakeReplicaBenchCommand(CLI::App& ember) {
  return MakeCommand(ember, kBenchReplicaCommand, AddReplicaBenchFlags, RunReplicaBench);
}

int RunReplicaBench(const ReplicaBenchFlags& flags) {
  auto report = bench::RunReplicaBench(flags.options, [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
  if (!report.ok()) {
    return PrintError("bench-replica", report.status(),
                      report.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
  }
  std::printf(
      "training with a replica following, against none (median of the rounds' ratios): pull "
      "%.3fx, push %.3fx\n"
      "lag from a push's acknowledgement to its row on the replica: p50 %.1f ms, p99 %.1f ms, "
      "max %.1f ms (%zu samples, %llu not seen within 10 s)\n"
      "first copy %.2f s; stream %.1f bytes per changed row, %.0f rows/s while following\n",
      report->pull_ratio, report->push_ratio, report->lag_p50_ms, report->lag_p99_ms,
      report->lag_max_ms, report->lag_ms.size(),
      static_cast<unsigned long long>(report->probes_lost), report->copy_seconds,
      report->stream_bytes_per_row, report->stream_rows_per_second);
  if (!flags.json.empty()) {
    Status written =
        WriteFileAtomically(flags.json, bench::ReplicaBenchJson(flags.options, *report));
    if (!written.ok()) return PrintError("bench-replica", written);
  }
  return 0;
}

}  // namespace ember::app
