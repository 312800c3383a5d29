// `ember tune`: a grid search over config settings, each trial a local cluster trained on the
// training split less validation and evaluated on validation only; the choice, its config as
// YAML, and the test figures of the chosen config alone (local/tune_grid.h has the rules).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <regex>
#include <span>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/config_flags.h"
#include "app/logging.h"
#include "app/process_setup.h"
#include "common/child_process.h"
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

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

std::string Describe(const std::vector<config::Override>& settings) {
  std::string text;
  for (const config::Override& o : settings) text += (text.empty() ? "" : " ") + o.ToString();
  return text.empty() ? "(the config as it is)" : text;
}

// The last error an `ember` process printed into `log` ("ember train: INVALID_ARGUMENT: ...",
// plain or as a JSON log line's message), or a line saying how it exited.
std::string ErrorInLog(const std::string& log, int exit_code) {
  auto text = ReadWholeFile(log, 64 << 20);
  std::string last;
  if (text.ok()) {
    static const std::regex error_line(R"(^ember [a-z]+: [A-Z_]+: .*)");
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with('{')) {
        const Json entry = Json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (entry.is_object() && entry.value("level", "") == "error") {
          line = entry.value("message", "");
        }
      }
      if (std::regex_match(line, error_line)) last = line;
    }
  }
  return last.empty() ? "exited with code " + std::to_string(exit_code) + " (log: " + log + ")"
                      : last;
}

// One training of a trial's config, with one model seed.
struct SeedRun {
  uint32_t seed = 0;
  std::string summary, log;
  std::unique_ptr<ChildProcess> process;
  Clock::time_point start;
  bool started = false;
  Status status;
  std::optional<trainer::ValidationPoint> validation;
};

struct Trial {
  local::TrialOutcome outcome;
  std::vector<config::Override> overrides;  // every override its processes load
  double epochs = 0;                        // train.epochs of its config
  std::vector<SeedRun> runs;                // one per seed
};

std::vector<std::string> ClusterArgs(const std::string& self, const TuneFlags& flags,
                                     const std::vector<config::Override>& overrides,
                                     const std::string& summary) {
  std::vector<std::string> argv = {self, "cluster", "--config", flags.config.path};
  if (!flags.config.data_root.empty()) {
    argv.insert(argv.end(), {"--data-root", flags.config.data_root});
  }
  for (const config::Override& o : overrides) argv.insert(argv.end(), {"--set", o.ToString()});
  argv.insert(argv.end(), {"--summary-json", summary});
  return argv;
}

// The command line of one seed's run: the trial's overrides, then its seed when there are several.
std::vector<std::string> RunArgs(const std::string& self, const TuneFlags& flags,
                                 const std::vector<config::Override>& overrides,
                                 const SeedRun& run) {
  std::vector<config::Override> with_seed = overrides;
  if (flags.seeds > 1) with_seed.push_back({"model.seed", std::to_string(run.seed)});
  return ClusterArgs(self, flags, with_seed, run.summary);
}

// A trial's outcome from its seeds' runs: the first failure, else the mean of their figures.
void SettleTrial(Trial& trial) {
  trainer::ValidationPoint mean;
  for (const SeedRun& run : trial.runs) {
    if (!run.status.ok()) {
      trial.outcome.status = trial.runs.size() > 1
                                 ? run.status.WithContext("seed " + std::to_string(run.seed))
                                 : run.status;
      return;
    }
    mean.hit_rate += run.validation->hit_rate;
    mean.ndcg += run.validation->ndcg;
    mean.epoch += run.validation->epoch;
    mean.step += run.validation->step;
  }
  const double n = static_cast<double>(trial.runs.size());
  mean.hit_rate /= n;
  mean.ndcg /= n;
  mean.epoch /= n;
  mean.step = static_cast<uint32_t>(mean.step / n);
  trial.outcome.validation = mean;
}

// One run of one trial, as the scheduler below handles it.
struct RunRef {
  size_t trial_index;
  Trial* trial;
  SeedRun* run;
};

// Runs `runs` in order, each its own `ember cluster`, flags.parallel at a time: started(ref) once
// each has started, finished(ref, exit code) once it has ended. Once should_stop() says so, no
// more start and those still running are stopped (their exit code is then -1).
void RunProcesses(const std::string& self, const TuneFlags& flags, std::span<const RunRef> runs,
                  const std::function<bool()>& should_stop,
                  const std::function<void(const RunRef&)>& started,
                  const std::function<void(const RunRef&, int)>& finished) {
  const size_t parallel = std::max<uint32_t>(1, flags.parallel);
  size_t next = 0, running = 0;
  while (true) {
    for (const RunRef& ref : runs) {
      SeedRun& run = *ref.run;
      if (!run.process) continue;
      const int code = run.process->WaitExit(std::chrono::milliseconds(0));
      if (code < 0 && !should_stop()) continue;
      if (code < 0) run.process->Stop();
      run.process.reset();
      --running;
      finished(ref, code);
    }
    while (running < parallel && next < runs.size() && !should_stop()) {
      const RunRef& ref = runs[next++];
      SeedRun& run = *ref.run;
      run.started = true;
      run.start = Clock::now();
      run.process =
          std::make_unique<ChildProcess>(RunArgs(self, flags, ref.trial->overrides, run), run.log);
      ++running;
      started(ref);
    }
    if (running == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Starts, waits for and times out the trials' runs, `parallel` at a time.
void RunTrials(const std::string& self, const TuneFlags& flags, const local::TuneBudget& budget,
               std::vector<Trial>& trials, const std::atomic<bool>& stop) {
  const auto begin = Clock::now();
  const auto over_time = [&] {
    return budget.time.count() > 0 && Clock::now() - begin >= budget.time;
  };
  // Every run, trial by trial.
  std::vector<RunRef> runs;
  for (size_t t = 0; t < trials.size(); ++t) {
    if (!trials[t].outcome.status.ok()) continue;  // its config did not load, or no budget
    for (SeedRun& run : trials[t].runs) runs.push_back({t, &trials[t], &run});
  }
  const auto name = [&](const RunRef& ref) {
    std::string text =
        "trial " + std::to_string(ref.trial_index + 1) + "/" + std::to_string(trials.size());
    if (ref.trial->runs.size() > 1) text += " seed " + std::to_string(ref.run->seed);
    return text + " " + Describe(ref.trial->outcome.settings);
  };
  const auto ended = [](const SeedRun& run) { return run.validation || !run.status.ok(); };
  const auto started = [&](const RunRef& ref) {
    std::printf("tune: %s: started\n", name(ref).c_str());
    std::fflush(stdout);
  };
  const auto finished = [&](const RunRef& ref, int code) {
    Trial& trial = *ref.trial;
    SeedRun& run = *ref.run;
    if (code < 0) {
      run.status = DeadlineExceeded(stop.load() ? "stopped by a signal"
                                                : "stopped: the time budget ran out");
    } else if (code != 0) {
      run.status = Unavailable(ErrorInLog(run.log, code));
    } else {
      auto text = ReadWholeFile(run.summary, 64 << 20);
      auto validation = text.ok() ? local::ValidationOfSummary(*text, trial.epochs)
                                  : Result<trainer::ValidationPoint>(text.status());
      if (validation.ok()) {
        run.validation = *validation;
      } else {
        run.status = validation.status();
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - run.start).count();
    trial.outcome.seconds += seconds;
    char figures[96] = "";
    if (run.validation) {
      std::snprintf(figures, sizeof(figures), "validation HR %.4f, NDCG %.4f, epoch %.1f",
                    run.validation->hit_rate, run.validation->ndcg, run.validation->epoch);
    }
    std::printf("tune: %s: %s (%.1f s)\n", name(ref).c_str(),
                run.validation ? figures : run.status.ToString().c_str(), seconds);
    std::fflush(stdout);
    if (std::all_of(trial.runs.begin(), trial.runs.end(), ended)) SettleTrial(trial);
  };
  RunProcesses(self, flags, runs, [&] { return over_time() || stop.load(); }, started, finished);
  for (Trial& trial : trials) {
    if (!trial.outcome.status.ok() || trial.outcome.validation) continue;
    // Some of its runs never started: its figures would be those of fewer seeds.
    if (std::any_of(trial.runs.begin(), trial.runs.end(),
                    [](const SeedRun& run) { return !run.status.ok(); })) {
      SettleTrial(trial);  // reports the failure
      continue;
    }
    const size_t started_runs = std::count_if(trial.runs.begin(), trial.runs.end(),
                                              [](const SeedRun& run) { return run.started; });
    trial.outcome.status = ResourceExhausted(
        started_runs == 0 ? "not run: the budget ran out"
                          : "only " + std::to_string(started_runs) + " of its " +
                                std::to_string(trial.runs.size()) +
                                " seeds ran before the budget ran out");
  }
}

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

// A trial's runs: with several seeds, from `first_seed` up, named NAME-seed-S; else one, NAME.
std::vector<SeedRun> SeedRuns(const std::string& name, uint32_t first_seed, uint32_t seeds) {
  std::vector<SeedRun> runs(std::max<uint32_t>(1, seeds));
  for (uint32_t r = 0; r < runs.size(); ++r) {
    runs[r].seed = first_seed + r;
    const std::string file =
        runs.size() > 1 ? name + "-seed-" + std::to_string(runs[r].seed) : name;
    runs[r].summary = file + ".json";
    runs[r].log = file + ".log";
  }
  return runs;
}

// Trains `trial`'s config with each of its seeds, `parallel` at a time, and reads each run's
// test figures (its summary's "eval") into *evals, in seed order.
Status RunForTest(const std::string& self, const TuneFlags& flags, Trial& trial,
                  const std::atomic<bool>& stop, std::vector<Json>* evals) {
  std::vector<RunRef> runs;
  for (SeedRun& run : trial.runs) runs.push_back({0, &trial, &run});
  Status failed;
  RunProcesses(
      self, flags, runs, [&] { return stop.load() || !failed.ok(); }, [](const RunRef&) {},
      [&](const RunRef& ref, int code) {
        if (!failed.ok() || code == 0) return;
        failed = code < 0 ? Aborted("stopped by a signal")
                          : Unavailable("the chosen config's run failed: " +
                                        ErrorInLog(ref.run->log, code));
      });
  if (!failed.ok()) return failed;
  if (stop.load()) return Aborted("stopped by a signal");
  for (const SeedRun& run : trial.runs) {
    auto text = ReadWholeFile(run.summary, 64 << 20);
    const Json summary = text.ok() ? Json::parse(*text, nullptr, false) : Json();
    const Json eval = summary.is_object() ? summary.value("eval", Json()) : Json();
    if (!eval.is_object() || !eval.contains("hit_rate")) {
      return DataLoss("the chosen config's run left no test figures in " + run.summary);
    }
    evals->push_back(eval);
  }
  return Status::Ok();
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
  if (Status trains = local::RequireTraining(*base); !trains.ok()) {
    return PrintError("tune", trains, 2);
  }
  if (base->data.kind != "interactions") {
    return PrintError("tune", InvalidArgument("data.kind: tune chooses on a validation split of "
                                              "interaction data; this config's data is '" +
                                              base->data.kind + "'"),
                      2);
  }
  const std::string self = SelfExecutable();
  if (self.empty()) return PrintError("tune", Internal("cannot locate the ember binary"));
  std::unique_ptr<ScratchDirectory> scratch;
  std::string work_dir = flags.work_dir;
  if (work_dir.empty()) {
    auto made = ScratchDirectory::Make("ember_tune_");
    if (!made.ok()) return PrintError("tune", made.status());
    scratch = std::move(*made);
    work_dir = scratch->path();
  } else if (Status made = MakeDirectories(work_dir); !made.ok()) {
    return PrintError("tune", made);
  }
  std::atomic<bool> stop{false};
  StopOnSignals(&stop);

  const std::vector<config::Override> base_overrides = flags.config.overrides();
  std::vector<Trial> trials = MakeTrials(flags, *axes, budget, work_dir);
  const std::string at_once =
      flags.parallel > 1 ? ", " + std::to_string(flags.parallel) + " runs at once" : "";
  const std::string of_seeds =
      flags.seeds > 1 ? " of " + std::to_string(flags.seeds) + " seeds each" : "";
  std::printf("ember tune: %zu trials%s of %s, choosing on validation HR@%u (NDCG@%u breaks "
              "ties)%s%s\n",
              trials.size(), of_seeds.c_str(), flags.config.path.c_str(), base->train.eval_k,
              base->train.eval_k, flags.seeds > 1 ? ", their means" : "", at_once.c_str());
  std::fflush(stdout);
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

  // The chosen config as YAML, beside the original by default.
  std::string out = flags.out;
  if (out.empty()) {
    const std::filesystem::path path(flags.config.path);
    out = (path.parent_path() / (path.stem().string() + ".tuned.yaml")).string();
  }
  std::vector<config::Override> chosen_overrides = base_overrides;
  chosen_overrides.insert(chosen_overrides.end(), settings.begin(), settings.end());
  auto yaml = local::ConfigWithOverrides(flags.config.path, chosen_overrides);
  if (!yaml.ok()) return PrintError("tune", yaml.status());
  if (Status written = WriteFileAtomically(out, *yaml); !written.ok()) {
    return PrintError("tune", written);
  }
  std::printf("\nchosen: trial %zu, %s\nwritten to %s\n", *chosen + 1, Describe(settings).c_str(),
              out.c_str());

  // The chosen config trained once more as configured (with each seed); only now is the test
  // split evaluated.
  std::printf("training the chosen config for its test figures ...\n");
  std::fflush(stdout);
  Trial final;
  final.outcome.settings = settings;
  final.overrides = chosen_overrides;
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
