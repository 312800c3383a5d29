// Shared subcommand helpers.
#include "app/command_support.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace ember::app {

std::optional<Flags> ParseCommandFlags(int argc, char** argv, const std::string& usage,
                                       const std::string& summary,
                                       const std::vector<FlagSpec>& known, int* exit_code) {
  auto flags = Flags::Parse(argc, argv, 2, known);
  const std::string text = UsageText(usage, summary, known);
  if (!flags.ok()) {
    std::fprintf(stderr, "ember %s: %s\n\n%s", argv[1], flags.status().ToString().c_str(),
                 text.c_str());
    *exit_code = 2;
    return std::nullopt;
  }
  if (flags->help()) {
    std::fputs(text.c_str(), stdout);
    *exit_code = 0;
    return std::nullopt;
  }
  return std::move(*flags);
}

std::vector<FlagSpec> SyncFlagSpecs() {
  return {
      {"trainers", "N", "override cluster.trainers (each trainer reads its own share of the data)"},
      {"mode", "MODE", "override train.mode: asp, bsp or ssp"},
      {"staleness", "S", "override train.staleness (ssp)"},
  };
}

namespace {

Status ApplySyncFlags(const Flags& flags, ClusterConfig* config) {
  if (flags.Has("mode")) {
    ASSIGN_OR_RETURN(config->train.sync.mode, ParseSyncMode(flags.Get("mode")));
    if (config->train.sync.synchronised()) config->train.pipeline = false;
  }
  ASSIGN_OR_RETURN(auto staleness, flags.GetUint("staleness"));
  if (staleness) config->train.sync.staleness = static_cast<uint32_t>(*staleness);
  ASSIGN_OR_RETURN(auto trainers, flags.GetUint("trainers"));
  if (trainers) {
    if (*trainers == 0) return InvalidArgument("--trainers: must be >= 1");
    ApplyTrainerCount(config, static_cast<uint32_t>(*trainers));
  }
  return Status::Ok();
}

}  // namespace

std::optional<ClusterConfig> LoadConfigFlag(const Flags& flags, const char* command) {
  if (!flags.Has("config")) {
    std::fprintf(stderr, "ember %s: --config is required (see --help)\n", command);
    return std::nullopt;
  }
  auto config = LoadClusterConfig(flags.Get("config"), flags.Get("data-root"));
  if (config.ok()) {
    Status overridden = ApplySyncFlags(flags, &*config);
    if (!overridden.ok()) config = overridden;
  }
  if (!config.ok()) {
    std::fprintf(stderr, "ember %s: %s\n", command, config.status().ToString().c_str());
    return std::nullopt;
  }
  return std::move(*config);
}

}  // namespace ember::app
