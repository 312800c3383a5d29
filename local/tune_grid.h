// The search `ember tune` runs: a grid of config settings, each combination a trial trained on
// the training split less validation, read back from the trial's summary, and the choice among
// them, made on validation figures alone (the trials never evaluate the test split).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/config_override.h"
#include "common/status.h"
#include "trainer/early_stopping.h"

namespace ember::local {

// One --grid: a config key and the values to try, in order.
struct GridAxis {
  std::string path;
  std::vector<std::string> values;  // YAML text each
};

// "model.temperature=0.05,0.1,0.2": values split at commas outside brackets, so that
// "model.hidden=[64],[128,64]" has two values. InvalidArgument naming the text when it has no
// '=', an empty key or value, or a value that is not YAML.
Result<GridAxis> ParseGridAxis(std::string_view text);

// Every combination of the axes' values, the first axis varying slowest.
std::vector<std::vector<config::Override>> GridTrials(std::span<const GridAxis> axes);

// What limits a search: the number of trials, the time since it began, or both (0: no limit).
struct TuneBudget {
  uint32_t trials = 0;
  std::chrono::seconds time{0};
};
// "12" (trials), "90s", "30m", "2h" (time); several joined by commas ("20,1h"). InvalidArgument
// naming the text otherwise.
Result<TuneBudget> ParseTuneBudget(std::string_view text);

// What a trial produced.
struct TrialOutcome {
  std::vector<config::Override> settings;  // its grid values
  Status status;                           // why it failed (then no figures)
  double seconds = 0;
  // Its validation figures: the best evaluation of early stopping, else the end of training.
  std::optional<trainer::ValidationPoint> validation;
};

// The validation figures a trial's summary JSON holds (early_stopping.best, else
// eval.validation with the run's `epochs`). DataLoss naming what is missing otherwise. Test
// figures, if any, are not read.
Result<trainer::ValidationPoint> ValidationOfSummary(std::string_view json, double epochs);

// The trial with the best validation figures (trainer::BetterValidation; the earlier trial wins
// an exact tie), among those that succeeded; none when none did.
std::optional<size_t> ChooseTrial(std::span<const TrialOutcome> trials);

// The config file at `path` with `overrides` applied, as YAML text under a comment naming the
// file and the settings.
Result<std::string> ConfigWithOverrides(const std::string& path,
                                        std::span<const config::Override> overrides);

}  // namespace ember::local
