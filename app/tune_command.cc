// `ember tune`: a grid search over config settings, each trial a local cluster trained on the
// training split less validation and evaluated on validation only; the choice, its config as
// YAML, and the test figures of the chosen config alone (local/tune_grid.h has the rules).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>
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

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

std::string Describe(const std::vector<config::Override>& settings) {
  std::string text;
  for (const config::Override& o : settings) text += (text.empty() ? "" : " ") + o.ToString();
  return text.empty() ? "(the config as it is)" : text;
}

// The last error an `ember` process printed into `log` ("ember train: INVALID_ARGUMENT: ..."),
// or a line saying how it exited.
std::string ErrorInLog(const std::string& log, int exit_code) {
  auto text = ReadWholeFile(log, 64 << 20);
  std::string last;
  if (text.ok()) {
    static const std::regex error_line(R"(^ember [a-z]+: [A-Z_]+: .*)");
    std::istringstream lines(*text);
    for (std::string line; std::getline(lines, line);) {
      if (std::regex_match(line, error_line)) last = line;
    }
  }
  return last.empty() ? "exited with code " + std::to_string(exit_code) + " (log: " + log + ")"
                      : last;
}

struct Trial {
  local::TrialOutcome outcome;
  std::vector<config::Override> overrides;  // every override its processes load
  double epochs = 0;                        // train.epochs of its config
  std::string summary, log;
  std::unique_ptr<ChildProcess> process;
  Clock::time_point start;
  bool run = false;
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

// Starts, waits for and times out the trials, `parallel` at a time.
void RunTrials(const std::string& self, const TuneFlags& flags, const local::TuneBudget& budget,
               std::vector<Trial>& trials, const std::atomic<bool>& stop) {
  const auto begin = Clock::now();
  const auto over_time = [&] {
    return budget.time.count() > 0 && Clock::now() - begin >= budget.time;
  };
  size_t next = 0, running = 0;
  const size_t total = trials.size();
  while (true) {
    for (size_t i = 0; i < total; ++i) {
      Trial& trial = trials[i];
      if (!trial.process) continue;
      const int code = trial.process->WaitExit(std::chrono::milliseconds(0));
      const bool out_of_time = over_time() || stop.load();
      if (code < 0 && !out_of_time) continue;
      if (code < 0) {
        trial.process->Stop();
        trial.outcome.status = DeadlineExceeded(stop.load() ? "stopped by a signal"
                                                            : "stopped: the time budget ran out");
      } else if (code != 0) {
        trial.outcome.status = Unavailable(ErrorInLog(trial.log, code));
      } else {
        auto text = ReadWholeFile(trial.summary, 64 << 20);
        auto validation = text.ok() ? local::ValidationOfSummary(*text, trial.epochs)
                                    : Result<trainer::ValidationPoint>(text.status());
        if (validation.ok()) {
          trial.outcome.validation = *validation;
        } else {
          trial.outcome.status = validation.status();
        }
      }
      trial.outcome.seconds = std::chrono::duration<double>(Clock::now() - trial.start).count();
      trial.process.reset();
      --running;
      char figures[96] = "";
      if (const auto& v = trial.outcome.validation) {
        std::snprintf(figures, sizeof(figures), "validation HR %.4f, NDCG %.4f, epoch %.1f",
                      v->hit_rate, v->ndcg, v->epoch);
      }
      std::printf("tune: trial %zu/%zu %s: %s (%.1f s)\n", i + 1, total,
                  Describe(trial.outcome.settings).c_str(),
                  trial.outcome.validation ? figures : trial.outcome.status.ToString().c_str(),
                  trial.outcome.seconds);
      std::fflush(stdout);
    }
    while (running < std::max<uint32_t>(1, flags.parallel) && next < total && !over_time() &&
           !stop.load()) {
      Trial& trial = trials[next++];
      if (!trial.outcome.status.ok()) continue;  // its config did not load
      trial.run = true;
      trial.start = Clock::now();
      trial.process = std::make_unique<ChildProcess>(
          ClusterArgs(self, flags, trial.overrides, trial.summary), trial.log);
      ++running;
      std::printf("tune: trial %zu/%zu %s: started\n", next, total,
                  Describe(trial.outcome.settings).c_str());
      std::fflush(stdout);
    }
    if (running == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (Trial& trial : trials) {
    if (!trial.run && trial.outcome.status.ok()) {
      trial.outcome.status = ResourceExhausted("not run: the budget ran out");
    }
  }
}

void PrintTable(const std::vector<Trial>& trials, std::optional<size_t> chosen, unsigned k) {
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
  } else {
    json["error"] = trial.outcome.status.ToString();
  }
  return json;
}

}  // namespace

int RunTune(const TuneFlags& flags) {
  SetUpLogging("tune");
  std::vector<local::GridAxis> axes;
  for (const std::string& text : flags.grid) {
    auto axis = local::ParseGridAxis(text);
    if (!axis.ok()) return PrintError("tune", axis.status(), 2);
    axes.push_back(*axis);
  }
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

  // Each trial: the base overrides, its grid values, then what makes it a validation-only run.
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
    trial.summary = name + ".json";
    trial.log = name + ".log";
    trials.push_back(std::move(trial));
  }
  if (budget.trials > 0 && trials.size() > budget.trials) {
    for (size_t i = budget.trials; i < trials.size(); ++i) {
      trials[i].outcome.status = ResourceExhausted("not run: the budget allows " +
                                                   std::to_string(budget.trials) + " trials");
    }
  }
  const std::string at_once =
      flags.parallel > 1 ? ", " + std::to_string(flags.parallel) + " at once" : "";
  std::printf("ember tune: %zu trials of %s, choosing on validation HR@%u (NDCG@%u breaks ties)%s\n",
              trials.size(), flags.config.path.c_str(), base->train.eval_k, base->train.eval_k,
              at_once.c_str());
  std::fflush(stdout);
  RunTrials(self, flags, budget, trials, stop);

  std::vector<local::TrialOutcome> outcomes;
  for (const Trial& trial : trials) outcomes.push_back(trial.outcome);
  const std::optional<size_t> chosen = local::ChooseTrial(outcomes);
  PrintTable(trials, chosen, base->train.eval_k);
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

  // The chosen config trained once more as configured; only now is the test split evaluated.
  std::printf("training the chosen config for its test figures ...\n");
  std::fflush(stdout);
  const std::string final_summary = work_dir + "/chosen.json";
  const std::string final_log = work_dir + "/chosen.log";
  ChildProcess final_run(ClusterArgs(self, flags, chosen_overrides, final_summary), final_log);
  int code = -1;
  while ((code = final_run.WaitExit(std::chrono::milliseconds(100))) < 0) {
    if (stop.load()) {
      final_run.Stop();
      write_report();
      return PrintError("tune", Aborted("stopped by a signal"));
    }
  }
  if (code != 0) {
    write_report();
    return PrintError("tune", Unavailable("the chosen config's run failed: " +
                                          ErrorInLog(final_log, code)));
  }
  auto text = ReadWholeFile(final_summary, 64 << 20);
  const Json summary = text.ok() ? Json::parse(*text, nullptr, false) : Json();
  const Json eval = summary.is_object() ? summary.value("eval", Json()) : Json();
  if (!eval.is_object() || !eval.contains("hit_rate")) {
    write_report();
    return PrintError("tune", DataLoss("the chosen config's run left no test figures in " +
                                       final_summary));
  }
  const unsigned k = base->train.eval_k;
  const char* hit = eval.value("protocol", "sampled") == "full" ? "Recall" : "HR";
  std::printf("test        %s@%u %.4f ± %.4f  NDCG@%u %.4f ± %.4f  (most-popular %s@%u %.4f)\n",
              hit, k, eval.value("hit_rate", 0.0), eval.value("hit_rate_se", 0.0), k,
              eval.value("ndcg", 0.0), eval.value("ndcg_se", 0.0), hit, k,
              eval.value("popularity_hit_rate", 0.0));
  report["test"] = eval;
  return write_report();
}

}  // namespace ember::app
