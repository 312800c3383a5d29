// `ember bench`: the data-plane benchmark (bench/bench.h): prints its table and optionally writes
// the figures as JSON.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <optional>

#include "app/commands.h"
#include "app/logging.h"
#include "app/process_setup.h"
#include "bench/bench.h"
#include "common/file_io.h"
#include "ps/server/server.h"

namespace ember::app {
namespace {

constexpr CommandText kBenchCommand = {
    .name = "bench",
    .summary = "drive synthetic pull/push traffic at a cluster and compare with raw ZeroMQ",
    .usage = "ember bench [options]",
    .description =
        "Measures the data plane: pull and push throughput, latency, server CPU and memory per "
        "row, against a cluster started in this process (or --scheduler), and the same traffic "
        "against bare ZeroMQ echo peers for comparison, the two alternating in --rounds rounds "
        "so that both see the same load. Always bounded by --requests and --seconds.",
};

void AddBenchFlags(CLI::App* command, BenchFlags* flags) {
  bench::BenchOptions& o = flags->options;
  const std::string cluster = "cluster", traffic = "traffic", limits = "limits";
  AddCount(command, "--servers", &o.servers, "N", "servers of the in-process cluster (default 1)")
      ->group(cluster);
  AddCount(command, "--server-threads", &flags->server_threads, "N",
           "worker threads per server (default: the cores less one per server, at least 1)")
      ->group(cluster);
  CLI::Option* scheduler =
      AddSchedulerEndpointFlag(command, &o.scheduler,
                               "benchmark a running cluster instead of an in-process one")
          ->group(cluster);
  AddValue(command, "--table", &o.table, "NAME",
           "table to use on a running cluster (default bench)")
      ->needs(scheduler)
      ->group(cluster);
  AddCount(command, "--clients", &o.clients, "N",
           "client threads, each with its own connection (default 1)")
      ->group(traffic);
  AddCount(command, "--keys-per-request", &o.keys_per_request, "K",
           "distinct keys per pull or push (default 16384)")
      ->group(traffic);
  AddCount(command, "--max-keys-per-message", &o.max_keys_per_message, "K",
           "a server's share of a request goes in messages of at most K keys (default 4096)")
      ->group(traffic);
  AddValue(command, "--exponent", &o.exponent, "X",
           "Zipf exponent of key popularity (default 1.05)")
      ->group(traffic);
  AddCount(command, "--vocabulary", &o.vocabulary, "N",
           "number of distinct keys (default 10000000)")
      ->group(traffic);
  AddCount(command, "--populate", &flags->populate, "N",
           "rows created before timing, the N most popular keys (default: the whole vocabulary)")
      ->group(traffic);
  AddCount(command, "--seed", &o.seed, "N", "seed of the key draws and the table (default 1)")
      ->group(traffic);
  AddCount(command, "--dim", &o.dim, "N", "row width of the benchmark table (default 64)")
      ->group("table");
  AddValue(command, "--optimizer", &o.optimizer, "KIND",
           "sgd, adagrad, adam or ftrl, learning rate 0.05 (default adagrad)")
      ->group("table");
  AddCount(command, "--requests", &o.requests, "N",
           "timed requests per client per operation, over all rounds (default 200)")
      ->group(limits);
  AddValue(command, "--seconds", &o.seconds, "S",
           "time limit per operation over all rounds, for ember and raw ZeroMQ each (default 30)")
      ->group(limits);
  AddCount(command, "--rounds", &flags->rounds, "R",
           "split the requests and the time limit into R rounds of ember pull, raw pull, ember "
           "push, raw push; 'vs raw' is the median of the rounds' ratios (default 5, at most "
           "--requests)")
      ->group(limits);
  AddValue(command, "--json", &flags->json, "FILE", "also write every figure as JSON")
      ->group("output");
  command
      ->add_flag("--curve", o.curve,
                 "authenticate and encrypt with CurveZMQ: the in-process cluster and the echo "
                 "peers make keys of their own (the cost of encryption, side by side)")
      ->group(cluster);
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
}

}  // namespace

Command MakeBenchCommand(CLI::App& ember) {
  return MakeCommand(ember, kBenchCommand, AddBenchFlags, RunBench);
}

int RunBench(const BenchFlags& flags) {
  // The in-process cluster's start-up lines would interleave with the table.
  SetUpLogging("bench", spdlog::level::warn);
  bench::BenchOptions options = flags.options;
  auto security = ResolveSecurity(flags.security);
  if (!security.ok()) return PrintError("bench", security.status(), 2);
  options.security = std::move(*security);
  options.server_threads = flags.server_threads.value_or(
      ps::DefaultWorkerThreads(std::max<uint32_t>(options.servers, 1)));
  options.rounds = flags.rounds.value_or(std::min(options.rounds, options.requests));
  options.populate = flags.populate.value_or(options.vocabulary);
  if (Status checked = bench::CheckBenchOptions(options); !checked.ok()) {
    return PrintError("bench", checked, 2);
  }
  auto report = bench::RunBench(options);
  if (!report.ok()) return PrintError("bench", report.status());
  std::fputs(bench::FormatBenchTable(*report).c_str(), stdout);
  std::fflush(stdout);
  if (!flags.json.empty()) {
    Status written = WriteFileAtomically(flags.json, bench::BenchReportJson(*report));
    if (!written.ok()) return PrintError("bench", written);
  }
  return 0;
}

}  // namespace ember::app
