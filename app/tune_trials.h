// The trials of `ember tune` (app/tune_command.cc): each seed's run of a trial is an `ember
// cluster` process, run `--parallel` at a time within the budget, its outcome read from its
// summary and, when it failed, from its log.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/command_flags.h"
#include "common/child_process.h"
#include "local/tune_grid.h"

namespace ember::app {

// One training of a trial's config, with one model seed.
struct SeedRun {
  uint32_t seed = 0;
  std::string summary, log;
  std::unique_ptr<ChildProcess> process;
  std::chrono::steady_clock::time_point start;
  bool started = false;
  Status status;
  std::optional<trainer::ValidationPoint> validation;
};

// One grid point: its settings, and one run per seed.
struct Trial {
  local::TrialOutcome outcome;
  std::vector<config::Override> overrides;  // every override its processes load
  double epochs = 0;                        // train.epochs of its config
  std::vector<SeedRun> runs;                // one per seed
};

// "KEY=V KEY=V", or "(the config as it is)".
std::string Describe(const std::vector<config::Override>& settings);

// A trial's runs: with several seeds, from `first_seed` up, named NAME-seed-S; else one, NAME.
std::vector<SeedRun> SeedRuns(const std::string& name, uint32_t first_seed, uint32_t seeds);

// Starts, waits for and times out the trials' runs (`self` is the ember binary), flags.parallel at
// a time, within `budget`; each trial's outcome is settled from its runs. Once `stop` is set no
// more start and those running are stopped.
void RunTrials(const std::string& self, const TuneFlags& flags, const local::TuneBudget& budget,
               std::vector<Trial>& trials, const std::atomic<bool>& stop);

// Trains `trial`'s config with each of its seeds, flags.parallel at a time, and reads each run's
// test figures (its summary's "eval") into *evals, in seed order.
Status RunForTest(const std::string& self, const TuneFlags& flags, Trial& trial,
                  const std::atomic<bool>& stop, std::vector<nlohmann::ordered_json>* evals);

}  // namespace ember::app
