// Helpers the subcommands share: flag parsing with --help handling, config loading, and
// writing a small file atomically.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "app/cluster_config.h"
#include "app/flags.h"
#include "common/file_io.h"  // WriteFileAtomically, used by the commands

namespace ember::app {

// Parses the subcommand's flags. On --help prints the usage to stdout and sets *exit_code = 0;
// on a bad flag prints the error and usage to stderr and sets *exit_code = 2. Either way it
// returns nullopt, and the command returns *exit_code.
std::optional<Flags> ParseCommandFlags(int argc, char** argv, const std::string& usage,
                                       const std::string& summary,
                                       const std::vector<FlagSpec>& known, int* exit_code);

// The flags that override how many trainers run and how they synchronise (cluster.trainers,
// train.mode, train.staleness); every role takes them so that all agree.
std::vector<FlagSpec> SyncFlagSpecs();
inline constexpr const char* kSyncFlags[] = {"trainers", "mode", "staleness"};

// Loads --config (required; relative data paths against --data-root when given) and applies the
// SyncFlagSpecs overrides present; prints the error and returns nullopt on failure.
std::optional<ClusterConfig> LoadConfigFlag(const Flags& flags, const char* command);

}  // namespace ember::app
