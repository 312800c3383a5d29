// `ember bench-tier`: the tier benchmark (bench/tier_bench.h), printing its account as it goes.
// Its recovery measurement runs this command again, as the process it kills.
#include <cstdio>

#include "app/commands.h"
#include "bench/tier_bench.h"

namespace ember::app {
namespace {

constexpr CommandText kBenchTierCommand = {
    .name = "bench-tier",
    .summary = "compare a table over RocksDB with a memory budget against one in memory",
    .usage = "ember bench-tier --data-dir DIR [options]",
    .description =
        "Compares a table with a RocksDB tier and a memory budget with the same table all in "
        "memory, and times recovery after SIGKILL.",
};

void AddTierBenchFlags(CLI::App* command, TierBenchFlags* flags) {
  bench::TierBenchOptions& o = flags->options;
  AddValue(command, "--data-dir", &o.data_dir, "DIR",
           "where the tiered table's RocksDB goes (required; new or empty)")
      ->required();
  AddCount(command, "--rows", &o.rows, "N", "rows in the table (default 20000000)");
  AddCount(command, "--dim", &o.dim, "N", "row width (default 16)");
  AddValue(command, "--optimizer", &o.optimizer, "NAME", "sgd, adagrad (default), adam or ftrl");
  AddCount(command, "--budget-percent", &flags->budget_percent, "P",
           "memory budget as a percentage of the rows (default 25)");
  AddCount(command, "--cold-file-percent", &o.cold_file_percent, "P",
           "the cold row file, as a percentage of the memory budget (default 400; 0: none)");
  AddCount(command, "--threads", &o.threads, "N", "request threads (default 2)");
  AddCount(command, "--keys-per-request", &o.keys_per_request, "N",
           "distinct keys per request (default 4096)");
  AddCount(command, "--seconds", &o.seconds, "S", "seconds per measured phase (default 10)");
  AddValue(command, "--durability", &flags->durability, "MODE",
           "ack (default), sync or flush, for the tiered pushes")
      ->check(CLI::IsMember({"ack", "sync", "flush"}));
  AddValue(command, "--lookahead", &o.lookaheads, "K[,K...]",
           "look-ahead depths of the tiered pull+push phase, one run each (default 0: no hints)")
      ->delimiter(',');
  // Internal: the recovery measurement's child.
  command->add_flag("--push-until-killed", flags->push_until_killed)->group("");
}

}  // namespace

Command MakeTierBenchCommand(CLI::App& ember) {
  return MakeCommand(ember, kBenchTierCommand, AddTierBenchFlags, RunTierBench);
}

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
                                    {"--cold-file-percent", o.cold_file_percent},
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
