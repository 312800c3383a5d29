// Running the trials of `ember tune`: each seed's run an `ember cluster` process.
#include "app/tune_trials.h"

#include <algorithm>
#include <regex>
#include <span>
#include <sstream>
#include <thread>

#include "common/file_io.h"

namespace ember::app {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

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

}  // namespace

std::string Describe(const std::vector<config::Override>& settings) {
  std::string text;
  for (const config::Override& o : settings) text += (text.empty() ? "" : " ") + o.ToString();
  return text.empty() ? "(the config as it is)" : text;
}

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

}  // namespace ember::app
