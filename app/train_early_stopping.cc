// Early-stopped training: the evaluation hook, the best state and what follows the stop.
#include "app/train_early_stopping.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/file_io.h"
#include "common/scratch_directory.h"
#include "ps/client/checkpoint.h"
#include "trainer/data_config.h"
#include "trainer/interaction_source.h"
#include "trainer/ranking_eval.h"

namespace ember::app {
namespace {

using trainer::AfterEarlyStop;

// Steps one epoch of `dataset` takes for this trainer (fractional).
double StepsPerEpoch(const trainer::InteractionDataset& dataset,
                     const trainer::TrainOptions& train) {
  return trainer::EpochShare(dataset, train.rank, train.sync.trainers) / train.batch_size;
}

// A directory for a checkpoint: the one the options name (kept), or a scratch one (removed).
struct StateDirectory {
  std::string path;
  std::unique_ptr<ScratchDirectory> scratch;
};

Result<StateDirectory> MakeStateDirectory(const std::string& named, std::string_view prefix) {
  StateDirectory dir;
  if (!named.empty()) {
    ASSIGN_OR_RETURN(dir.path, CanonicalDirectory(named, "train.early_stopping.dir"));
    return dir;
  }
  ASSIGN_OR_RETURN(dir.scratch, ScratchDirectory::Make(prefix));
  dir.path = dir.scratch->path();
  return dir;
}

// Trains a fresh model on the whole training split (validation items back in it) for as many
// epochs as `best` had seen, from the rows in `initial_dir`.
Result<EarlyStoppedModel> Retrain(const EarlyStoppingRun& run, const trainer::ValidationPoint& best,
                                  const std::string& initial_dir) {
  const local::ClusterConfig& config = *run.config;
  trainer::InteractionOptions options = run.dataset->options();
  options.validation = false;
  EarlyStoppedModel model;
  ASSIGN_OR_RETURN(model.dataset, trainer::LoadInteractions(options));
  ASSIGN_OR_RETURN(model.client, ps::Client::Connect(*run.client_options));
  RETURN_IF_ERROR(ps::RestoreServers(*model.client, initial_dir, config.train.sync.clock_timeout)
                      .status()
                      .WithContext("resetting the rows for the retrain"));
  ASSIGN_OR_RETURN(model.backend, trainer::MakeBackend(config.train.backend, config.model));
  trainer::InteractionSource source(model.dataset, config.data.interactions.seed,
                                    config.train.rank, config.train.sync.trainers,
                                    config.model.negatives,
                                    trainer::SharesNegatives(config.model));
  const double steps_per_epoch = StepsPerEpoch(*model.dataset, config.train);
  const uint32_t steps =
      std::max<uint32_t>(1, static_cast<uint32_t>(std::ceil(best.epoch * steps_per_epoch - 1e-9)));
  ASSIGN_OR_RETURN(auto loop, trainer::Trainer::Create(model.client.get(), model.backend.get(),
                                                        &source, config.model, config.train));
  std::printf("ember train: retraining from scratch on all %zu training interactions for %.2f "
              "epochs (%u steps)\n",
              model.dataset->num_train(), best.epoch, steps);
  std::fflush(stdout);
  ASSIGN_OR_RETURN(model.summary,
                   loop->Run(steps, [&](const trainer::WindowStats& w) { run.on_window(w, steps); }));
  model.report.final_steps = model.summary.steps;
  model.report.final_epochs = model.summary.steps / steps_per_epoch;
  return model;
}

// FailedPrecondition unless the run can stop early: validation cases, and one trainer.
Status CheckEarlyStopping(const trainer::InteractionDataset& dataset,
                          const trainer::TrainOptions& train) {
  if (dataset.validation_cases().empty()) {
    return FailedPrecondition("train.early_stopping: the data has no validation cases (set "
                              "data.interactions.validation: true; users need 3 interactions)");
  }
  if (train.sync.trainers != 1) {
    return FailedPrecondition("train.early_stopping: needs a run of one trainer (this run has " +
                              std::to_string(train.sync.trainers) + ")");
  }
  return Status::Ok();
}

// "early stopping on N validation users after steps 10 20 30 ..., patience P, then T".
void PrintEvaluationPlan(const trainer::InteractionDataset& dataset,
                         const trainer::EarlyStoppingOptions& options,
                         const std::vector<uint32_t>& eval_steps) {
  std::printf("ember train: early stopping on %zu validation users after steps",
              dataset.validation_cases().size());
  for (size_t i = 0; i < eval_steps.size() && i < 8; ++i) std::printf(" %u", eval_steps[i]);
  std::printf("%s, patience %u, then %s\n", eval_steps.size() > 8 ? " ..." : "", options.patience,
              std::string(trainer::AfterEarlyStopName(options.then)).c_str());
  std::fflush(stdout);
}

}  // namespace

Result<EarlyStoppedModel> TrainWithEarlyStopping(const EarlyStoppingRun& run) {
  const local::ClusterConfig& config = *run.config;
  const trainer::TrainOptions& train = config.train;
  const trainer::EarlyStoppingOptions& options = train.early_stopping;
  const trainer::InteractionDataset& dataset = *run.dataset;
  RETURN_IF_ERROR(CheckEarlyStopping(dataset, train));
  const double steps_per_epoch = StepsPerEpoch(dataset, train);
  const std::vector<uint32_t> eval_steps =
      trainer::EvaluationSteps(options, run.steps, steps_per_epoch);

  // Where the best state goes; for a retrain, the rows as they were before training.
  StateDirectory best_dir, initial_dir;
  if (options.then == AfterEarlyStop::kRestoreBest) {
    ASSIGN_OR_RETURN(best_dir, MakeStateDirectory(options.dir, "ember_best_"));
  }
  if (options.then == AfterEarlyStop::kRetrain) {
    ASSIGN_OR_RETURN(initial_dir, MakeStateDirectory("", "ember_initial_"));
    RETURN_IF_ERROR(run.loop->WriteCheckpoint(initial_dir.path)
                        .WithContext("saving the rows before training, for the retrain"));
  }
  PrintEvaluationPlan(dataset, options, eval_steps);

  trainer::EarlyStopping tracker(options.patience);
  const char* hit = train.eval_protocol == "full" ? "Recall" : "HR";
  auto evaluate = [&](uint32_t step) -> Result<bool> {
    if (!std::binary_search(eval_steps.begin(), eval_steps.end(), step)) return false;
    ASSIGN_OR_RETURN(trainer::RankingResult result,
                     trainer::EvaluateRanking(*run.client, *run.backend, dataset,
                                              dataset.validation_cases(), config.model, train));
    const trainer::ValidationPoint point{step, step / steps_per_epoch, result.hit_rate,
                                         result.ndcg};
    const bool improved = tracker.Record(point);
    std::printf("validation  epoch %6.2f (step %u): %s@%u %.4f  NDCG@%u %.4f  %s\n", point.epoch,
                step, hit, train.eval_k, point.hit_rate, train.eval_k, point.ndcg,
                improved ? "best so far" : "no better");
    std::fflush(stdout);
    if (improved && options.then == AfterEarlyStop::kRestoreBest) {
      RETURN_IF_ERROR(run.loop->WriteCheckpoint(best_dir.path).WithContext("saving the best state"));
    }
    return tracker.exhausted();
  };
  EarlyStoppedModel model;
  ASSIGN_OR_RETURN(model.summary,
                   run.loop->Run(run.steps,
                                 [&](const trainer::WindowStats& w) { run.on_window(w, run.steps); },
                                 evaluate));
  const uint32_t stopped = run.loop->completed_steps();
  const trainer::ValidationPoint best = *tracker.best();
  std::printf("ember train: %s after step %u; best validation after epoch %.2f (step %u)\n",
              stopped < run.steps ? "stopped early" : "ran every step", stopped, best.epoch,
              best.step);
  model.report.final_steps = stopped;
  model.report.final_epochs = stopped / steps_per_epoch;
  switch (options.then) {
    case AfterEarlyStop::kRestoreBest: {
      if (best.step != stopped) {
        RETURN_IF_ERROR(run.loop->Restore(best_dir.path).WithContext("restoring the best state"));
        const std::string kept = best_dir.scratch ? "" : " (kept in " + best_dir.path + ")";
        std::printf("ember train: restored the state after step %u%s\n", best.step, kept.c_str());
      }
      model.report.final_steps = best.step;
      model.report.final_epochs = best.epoch;
      break;
    }
    case AfterEarlyStop::kRetrain: {
      ASSIGN_OR_RETURN(model, Retrain(run, best, initial_dir.path));
      break;
    }
    case AfterEarlyStop::kKeepLast:
      break;
  }
  model.report.evaluations = tracker.history();
  model.report.best = best;
  model.report.stopped_after_step = stopped;
  model.report.then = std::string(trainer::AfterEarlyStopName(options.then));
  return model;
}

}  // namespace ember::app
