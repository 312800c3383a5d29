// `ember tune`: a grid search over config settings, each trial a local cluster trained on the
// training split less validation and evaluated on validation only; the choice, its config as
// YAML, and the test figures of the chosen config alone (local/tune_grid.h has the rules).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/config_flags.h"
#include "app/logging.h"
#include "app/process_setup.h"
#include "app/tune_trials.h"
#include "common/file_io.h"
#include "common/scratch_directory.h"
#include "local/tune_grid.h"

namespace ember::app {
namespace {

constexpr CommandText kTuneCommand = {
    .name = "tune",
    .summary = "train a grid of config settings and choose one on the validation split",
    .usage = "ember tune --config FILE --grid KEY=V1,V2,... [--grid ...] [options]",
    .description =
        "Runs a local cluster per combination of the --grid values (a trial), trained on the "
        "training split less each user's validation item and evaluated on validation only. "
        "Chooses the trial with the best validation HR@k (NDCG@k breaks ties; with "
        "train.early_stopping, its best evaluation), prints a table of the trials, writes the "
        "chosen config as YAML, then trains it once more and reports its test figures alone. A "
        "trial that fails is reported and skipped.",
};

void AddTuneFlags(CLI::App* command, TuneFlags* flags) {
  AddConfigFlags(command, &flags->config, /*required=*/true);
  AddDataRootFlag(command, &flags->config);
  AddTrainingFlags(command, &flags->config);
  const std::string search = "search";
  command->add_option("--grid", flags->grid,
                      "a key and the values to try, e.g. model.temperature=0.05,0.1,0.2 or "
                      "model.hidden=[64],[128,64] (repeatable: every combination is a trial)")
      ->type_name("KEY=V1,V2")
      ->required()
      ->group(search);
  AddValue(command, "--budget", &flags->budget, "LIMIT",
           "at most N trials (12), this much time (90s, 30m, 2h: trials still running then are "
           "stopped), or both (12,2h); trials run in grid order, the first key varying slowest")
      ->group(search);
  AddCount(command, "--parallel", &flags->parallel, "P",
           "runs at once, each its own local cluster (default 1)")
      ->group(search);
  AddCount(command, "--seeds", &flags->seeds, "N",
           "train each trial with N model seeds (model.seed and the N-1 after it) and choose on "
           "their mean validation figures; the chosen config's test figures are then the mean of "
           "N runs too, with their spread (default 1)")
      ->check(CLI::PositiveNumber)
      ->group(search);
  AddValue(command, "--out", &flags->out, "FILE",
           "the chosen config (default: CONFIG.tuned.yaml beside --config, so that its relative "
           "data paths still resolve)")
      ->group("output");
  AddValue(command, "--json", &flags->json, "FILE", "every trial, the choice and its test figures")
      ->group("output");
  AddValue(command, "--work-dir", &flags->work_dir, "DIR",
           "keep each trial's log and summary here (default: a scratch folder, removed)")
      ->group("output");
}

}  // namespace

Command MakeTuneCommand(CLI::App& ember) {
  return MakeCommand(ember, kTuneCommand, AddTuneFlags, RunTune);
}

namespace {

using Json = nlohmann::ordered_json;

void PrintTable(const std::vector<Trial>& trials, std::optional<size_t> chosen, unsigned k,
                uint32_t seeds) {
  if (seeds > 1) {
    std::printf("\nvalidation figures and epochs: means of %u seeds; time: all their runs", seeds);
  }
  std::printf("\n  trial  validation HR@%u  NDCG@%u  epoch   time     settings\n", k, k);
  for (size_t i = 0; i < trials.size(); ++i) {
    const local::TrialOutcome& t = trials[i].outcome;
    if (t.validation) {
      std::printf("%s %5zu  %15.4f  %7.4f  %5.1f  %6.1f s  %s\n", chosen == i ? "*" : " ", i + 1,
                  t.validation->hit_rate, t.validation->ndcg, t.validation->epoch, t.seconds,
                  Describe(t.settings).c_str());
    } else {
      std::printf("  %5zu  %15s  %7s  %5s  %6.1f s  %s\n           %s\n", i + 1, "-", "-", "-",
                  t.seconds, Describe(t.settings).c_str(), t.status.ToString().c_str());
    }
  }
}

Json TrialJson(const Trial& trial) {
  Json settings = Json::object();
  for (const config::Override& o : trial.outcome.settings) settings[o.path] = o.value;
  Json json = {{"settings", settings}, {"seconds", trial.outcome.seconds}};
  if (trial.outcome.validation) {
    const auto& v = *trial.outcome.validation;
    json["validation"] = {
        {"hit_rate", v.hit_rate}, {"ndcg", v.ndcg}, {"epoch", v.epoch}, {"step", v.step}};
    if (trial.runs.size() > 1) {
      json["seeds"] = Json::array();
      for (const SeedRun& run : trial.runs) {
        json["seeds"].push_back({{"seed", run.seed},
                                 {"hit_rate", run.validation->hit_rate},
                                 {"ndcg", run.validation->ndcg},
                                 {"epoch", run.validation->epoch}});
      }
    }
  } else {
    json["error"] = trial.outcome.status.ToString();
  }
  return json;
}

// Test figures of several seeds' runs: the means of HR and NDCG with their standard deviations
// across seeds, the mean of each run's standard errors, most-popular's figures, and every run's.
Json SeedSummary(const std::vector<Json>& evals) {
  Json summary = Json::object();
  for (const char* key : {"hit_rate", "ndcg", "hit_rate_se", "ndcg_se"}) {
    double sum = 0, squares = 0;
    for (const Json& eval : evals) {
      const double v = eval.value(key, 0.0);
      sum += v;
      squares += v * v;
    }
    const double n = static_cast<double>(evals.size());
    const double mean = sum / n;
    summary[key] = mean;
    if (std::string_view(key).ends_with("_se")) continue;
    const double variance = n > 1 ? std::max(0.0, (squares - n * mean * mean) / (n - 1)) : 0.0;
    summary[std::string(key) + "_sd"] = std::sqrt(variance);
  }
  for (const char* key : {"protocol", "k", "popularity_hit_rate", "popularity_ndcg"}) {
    if (evals.front().contains(key)) summary[key] = evals.front()[key];
  }
  summary["seeds"] = evals;
  return summary;
}

// The --grid axes; InvalidArgument for a malformed one, or for model.seed when --seeds varies it.
Result<std::vector<local::GridAxis>> ParseAxes(const TuneFlags& flags) {
  std::vector<local::GridAxis> axes;
  for (const std::string& text : flags.grid) {
    ASSIGN_OR_RETURN(local::GridAxis axis, local::ParseGridAxis(text));
    if (flags.seeds > 1 && axis.path == "model.seed") {
      return InvalidArgument("--grid 'model.seed': --seeds " + std::to_string(flags.seeds) +
                             " varies model.seed itself (set the first with --set)");
    }
    axes.push_back(axis);
  }
  return axes;
}

// Each trial: the base overrides, its grid values, then what makes it a validation-only run;
// those beyond the budget's count are marked not run.
std::vector<Trial> MakeTrials(const TuneFlags& flags, const std::vector<local::GridAxis>& axes,
                              const local::TuneBudget& budget, const std::string& work_dir) {
  const std::vector<config::Override> base_overrides = flags.config.overrides();
  std::vector<Trial> trials;
  for (auto& settings : local::GridTrials(axes)) {
    Trial trial;
    trial.outcome.settings = settings;
    trial.overrides = base_overrides;
    trial.overrides.insert(trial.overrides.end(), settings.begin(), settings.end());
    trial.overrides.push_back({"data.interactions.validation", "true"});
    trial.overrides.push_back({"train.eval_test", "false"});
    auto loaded = local::LoadClusterConfig(flags.config.path, flags.config.data_root,
                                           trial.overrides);
    if (loaded.ok() && loaded->train.early_stopping.enabled()) {
      // The best evaluation is what counts; a retrain or a restore would only cost time.
      trial.overrides.push_back({"train.early_stopping.then", "keep_last"});
    }
    if (!loaded.ok()) {
      trial.outcome.status = loaded.status();
    } else {
      trial.epochs = loaded->train.epochs;
    }
    const std::string name = work_dir + "/trial-" + std::to_string(trials.size() + 1);
    const uint32_t first_seed = loaded.ok() ? loaded->model.seed : 0;
    trial.runs = SeedRuns(name, first_seed, flags.seeds);
    trials.push_back(std::move(trial));
  }
  if (budget.trials > 0 && trials.size() > budget.trials) {
    for (size_t i = budget.trials; i < trials.size(); ++i) {
      trials[i].outcome.status = ResourceExhausted("not run: the budget allows " +
                                                   std::to_string(budget.trials) + " trials");
    }
  }
  return trials;
}

// Prints the chosen config's test figures, per seed and their summary when there are several;
// returns what the report holds of them.
Json PrintTestFigures(const Trial& final, const std::vector<Json>& evals, unsigned k) {
  const char* hit = evals.front().value("protocol", "sampled") == "full" ? "Recall" : "HR";
  const auto print = [&](const char* label, const Json& eval) {
    std::printf("%-11s %s@%u %.4f ± %.4f  NDCG@%u %.4f ± %.4f  (most-popular %s@%u %.4f)\n",
                label, hit, k, eval.value("hit_rate", 0.0), eval.value("hit_rate_se", 0.0), k,
                eval.value("ndcg", 0.0), eval.value("ndcg_se", 0.0), hit, k,
                eval.value("popularity_hit_rate", 0.0));
  };
  if (evals.size() == 1) {
    print("test", evals.front());
    return evals.front();
  }
  for (size_t r = 0; r < evals.size(); ++r) {
    print(("seed " + std::to_string(final.runs[r].seed)).c_str(), evals[r]);
  }
  const Json summary = SeedSummary(evals);
  std::printf("test        %s@%u %.4f (sd %.4f over %zu seeds)  NDCG@%u %.4f (sd %.4f)\n", hit, k,
              summary["hit_rate"].get<double>(), summary["hit_rate_sd"].get<double>(), evals.size(),
              k, summary["ndcg"].get<double>(), summary["ndcg_sd"].get<double>());
  return summary;
}

// Where the trials' logs and summaries go: --work-dir, else a scratch folder that `scratch` holds
// (and removes).
Result<std::string> MakeWorkDir(const TuneFlags& flags,
                                std::unique_ptr<ScratchDirectory>& scratch) {
  if (!flags.work_dir.empty()) {
    RETURN_IF_ERROR(MakeDirectories(flags.work_dir));
    return flags.work_dir;
  }
  ASSIGN_OR_RETURN(scratch, ScratchDirectory::Make("ember_tune_"));
  return scratch->path();
}

// The chosen config: the overrides that make it, and the YAML file it was written to.
struct ChosenConfig {
  std::vector<config::Override> overrides;
  std::string file;
};

// Writes the config with the chosen trial's `settings` as YAML, to --out, else beside the
// original.
Result<ChosenConfig> WriteChosenConfig(const TuneFlags& flags,
                                       const std::vector<config::Override>& settings) {
  std::string out = flags.out;
  if (out.empty()) {
    const std::filesystem::path path(flags.config.path);
    out = (path.parent_path() / (path.stem().string() + ".tuned.yaml")).string();
  }
  std::vector<config::Override> overrides = flags.config.overrides();
  overrides.insert(overrides.end(), settings.begin(), settings.end());
  ASSIGN_OR_RETURN(const std::string yaml,
                   local::ConfigWithOverrides(flags.config.path, overrides));
  RETURN_IF_ERROR(WriteFileAtomically(out, yaml));
  return ChosenConfig{std::move(overrides), out};
}

// Refuses a base config tune cannot choose on: one that does not train, or whose data has no
// validation split.
Status CheckTunable(const local::ClusterConfig& base) {
  RETURN_IF_ERROR(local::RequireTraining(base));
  if (base.data.kind != "interactions") {
    return InvalidArgument(
        "data.kind: tune chooses on a validation split of interaction data; "
        "this config's data is '" +
        base.data.kind + "'");
  }
  return Status::Ok();
}

// "ember tune: 4 trials of CONFIG, choosing on validation HR@10 (NDCG@10 breaks ties)".
void PrintTuneHeader(const TuneFlags& flags, size_t trials, uint32_t k) {
  const std::string at_once =
      flags.parallel > 1 ? ", " + std::to_string(flags.parallel) + " runs at once" : "";
  const std::string of_seeds =
      flags.seeds > 1 ? " of " + std::to_string(flags.seeds) + " seeds each" : "";
  std::printf(
      "ember tune: %zu trials%s of %s, choosing on validation HR@%u (NDCG@%u breaks "
      "ties)%s%s\n",
      trials, of_seeds.c_str(), flags.config.path.c_str(), k, k,
      flags.seeds > 1 ? ", their means" : "", at_once.c_str());
  std::fflush(stdout);
}

}  // namespace

int RunTune(const TuneFlags& flags) {
  SetUpLogging("tune");
  auto axes = ParseAxes(flags);
  if (!axes.ok()) return PrintError("tune", axes.status(), 2);
  local::TuneBudget budget;
  if (!flags.budget.empty()) {
    auto parsed = local::ParseTuneBudget(flags.budget);
    if (!parsed.ok()) return PrintError("tune", parsed.status(), 2);
    budget = *parsed;
  }
  auto base = LoadConfig(flags.config);
  if (!base.ok()) return PrintError("tune", base.status(), 2);
  if (Status tunable = CheckTunable(*base); !tunable.ok()) return PrintError("tune", tunable, 2);
  const std::string self = SelfExecutable();
  if (self.empty()) return PrintError("tune", Internal("cannot locate the ember binary"));
  std::unique_ptr<ScratchDirectory> scratch;
  auto made_work_dir = MakeWorkDir(flags, scratch);
  if (!made_work_dir.ok()) return PrintError("tune", made_work_dir.status());
  const std::string work_dir = *made_work_dir;
  std::atomic<bool> stop{false};
  StopOnSignals(&stop);

  std::vector<Trial> trials = MakeTrials(flags, *axes, budget, work_dir);
  PrintTuneHeader(flags, trials.size(), base->train.eval_k);
  RunTrials(self, flags, budget, trials, stop);

  std::vector<local::TrialOutcome> outcomes;
  for (const Trial& trial : trials) outcomes.push_back(trial.outcome);
  const std::optional<size_t> chosen = local::ChooseTrial(outcomes);
  PrintTable(trials, chosen, base->train.eval_k, flags.seeds);
  Json report = {{"config", flags.config.path}, {"trials", Json::array()}};
  for (const Trial& trial : trials) report["trials"].push_back(TrialJson(trial));
  auto write_report = [&]() -> int {
    if (flags.json.empty()) return 0;
    Status written = WriteFileAtomically(flags.json, report.dump(2) + "\n");
    return written.ok() ? 0 : PrintError("tune", written);
  };
  if (stop.load()) {
    write_report();
    return PrintError("tune", Aborted("stopped by a signal"));
  }
  if (!chosen) {
    write_report();
    return PrintError("tune", FailedPrecondition("no trial finished with validation figures"));
  }
  const std::vector<config::Override>& settings = trials[*chosen].outcome.settings;
  report["chosen"] = *chosen + 1;

  auto chosen_config = WriteChosenConfig(flags, settings);
  if (!chosen_config.ok()) return PrintError("tune", chosen_config.status());
  std::printf("\nchosen: trial %zu, %s\nwritten to %s\n", *chosen + 1, Describe(settings).c_str(),
              chosen_config->file.c_str());

  // The chosen config trained once more as configured (with each seed); only now is the test
  // split evaluated.
  std::printf("training the chosen config for its test figures ...\n");
  std::fflush(stdout);
  Trial final;
  final.outcome.settings = settings;
  final.overrides = chosen_config->overrides;
  final.runs = SeedRuns(work_dir + "/chosen", trials[*chosen].runs.front().seed, flags.seeds);
  std::vector<Json> evals;
  if (Status tested = RunForTest(self, flags, final, stop, &evals); !tested.ok()) {
    write_report();
    return PrintError("tune", tested);
  }
  report["test"] = PrintTestFigures(final, evals, base->train.eval_k);
  return write_report();
}

}  // namespace ember::app
