// `ember bench-tier`: the tier benchmark (bench/tier_bench.h), printing its account as it goes.
// Its recovery measurement runs this command again, as the process it kills.
#include <cstdio>

#include "app/commands.h"
#include "bench/tier_bench.h"

namespace ember::app {
namespace {

// This command, as the pushing child of the recovery measurement, with the same options.
std::vector<std::string> PusherCommand(const TierBenchFlags& flags) {
  const bench::TierBenchOptions& o = flags.options;
  std::vector<std::string> command = {"/proc/self/exe", "bench-tier",   "--push-until-killed",
                                      "--data-dir",     o.data_dir,     "--optimizer",
                                      o.optimizer,      "--durability", flags.durability};
  for (const auto& [flag, value] : {std::pair<const char*, uint64_t>{"--rows", o.rows},
                                    {"--dim", o.dim},
                                    {"--budget-percent", flags.budget_percent},
                                    {"--threads", o.threads},
                                    {"--keys-per-request", o.keys_per_request}}) {
    command.insert(command.end(), {flag, std::to_string(value)});
  }
  return command;
}

}  // namespace

int RunTierBench(const TierBenchFlags& flags) {
  bench::TierBenchOptions options = flags.options;
  options.budget_fraction = flags.budget_percent / 100.0;
  options.durability = *ps::ParseDurability(flags.durability);  // checked by the flag
  if (Status checked = bench::CheckTierBenchOptions(options); !checked.ok()) {
    return PrintError("bench-tier", checked, 2);
  }
  if (flags.push_until_killed) {
    Status pushed = bench::PushUntilKilled(options);
    return pushed.ok() ? 0 : PrintError("bench-tier", pushed, 2);
  }
  options.pusher_command = PusherCommand(flags);
  auto report = bench::RunTierBench(options, [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  });
  if (!report.ok()) {
    return PrintError("bench-tier", report.status(),
                      report.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
  }
  return 0;
}

}  // namespace ember::app
