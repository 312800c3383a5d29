// Flags of the commands that read the job config (cluster, train, scheduler, server): --config,
// --data-root and --set KEY=VALUE (any key, repeatable), and named shorthands for the overrides
// used most (`--steps 50` is `--set train.steps=50 --set train.epochs=0`). They all become one
// list of config overrides (common/config_override.h), applied when the config loads, that
// `ember cluster` passes on to every process it starts, so that all of them load the same config.
#pragma once

#include <string>
#include <vector>

#include "app/command_line.h"
#include "common/config_override.h"
#include "local/cluster_config.h"

namespace ember::app {

struct ConfigFlags {
  std::string path;                          // --config; empty when not given
  std::string data_root;                     // --data-root
  std::vector<config::Override> set;         // --set, in the order given
  std::vector<config::Override> shorthands;  // the named flags' overrides, applied after --set
  // What a named flag implies unless set explicitly, applied first: `--mode bsp` turns
  // train.pipeline off, but `--mode bsp --pipeline` is still the error it is in a config.
  std::vector<config::Override> implied;

  // implied, then set, then shorthands.
  std::vector<config::Override> overrides() const;
};

// --config FILE (required, or optional with --set needing it) and --set KEY=VALUE.
CLI::Option* AddConfigFlags(CLI::App* command, ConfigFlags* flags, bool required);
// --data-root DIR.
void AddDataRootFlag(CLI::App* command, ConfigFlags* flags);
// --steps, --epochs, --batch-size, --backend, --[no-]wire-fp16, --[no-]pipeline.
void AddTrainingFlags(CLI::App* command, ConfigFlags* flags);
// --trainers, --mode, --staleness: every role of a run takes them, so that all agree.
void AddSyncFlags(CLI::App* command, ConfigFlags* flags);
// --checkpoint-every, --checkpoint-dir.
void AddCheckpointFlags(CLI::App* command, ConfigFlags* flags);
// --memory-budget BYTES for cluster.server_memory_budget.
void AddMemoryBudgetFlag(CLI::App* command, ConfigFlags* flags);

// Loads --config with --data-root and the overrides.
Result<local::ClusterConfig> LoadConfig(const ConfigFlags& flags);

// "--config PATH" and a "--set KEY=VALUE" per override, for a child process that is to load the
// same config.
std::vector<std::string> ConfigArgs(const ConfigFlags& flags);

}  // namespace ember::app
