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
