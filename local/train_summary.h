// The record a training run leaves for scripts (`ember train --summary-json`, and `ember cluster`
// for each of its trainers): the run's figures, each server's stats summed over its tables, and
// the evaluation when there was one, as one JSON object. Figures that are not finite (a loss that
// diverged to NaN) are written as null, so the record always parses. Reentrant.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/server_stats.h"
#include "trainer/early_stopping.h"
#include "trainer/ranking_metrics.h"
#include "trainer/trainer.h"

namespace ember::local {

// Leave-one-out ranking of the trained model and of the most-popular-item baseline.
struct EvalFigures {
  trainer::RankingResult model;
  trainer::RankingResult popularity;
  std::string protocol = "sampled";  // TrainOptions::eval_protocol
  std::optional<trainer::RankingResult> validation;  // with data.interactions.validation
  bool test = true;  // false: the test split was not evaluated (model and popularity are empty)
};

// What early stopping saw and chose (train.early_stopping).
struct EarlyStoppingReport {
  std::vector<trainer::ValidationPoint> evaluations;  // in step order
  trainer::ValidationPoint best;
  uint32_t stopped_after_step = 0;  // where training on the validation split ended
  std::string then;                 // AfterEarlyStopName
  // The final model's training: `final_steps` steps, `final_epochs` epochs of its training data
  // (with `then` retrain, of the whole training set, validation items included).
  uint32_t final_steps = 0;
  double final_epochs = 0;
};

// Mean time per step spent waiting for the other trainers, in ms.
double WaitPerStepMs(const trainer::TrainSummary& summary);

// A server's table stats added up over its tables (name left empty).
TableStats SumTableStats(const ServerStats& server);

// {"steps", "samples", "seconds", "samples_per_second", "wait_ms_per_step", "backend",
//  "loss_start", "loss_end", "servers": [{"id", "rows", ...}], "eval": {...} and
//  "early_stopping": {...} when given}, indented, ending in a newline.
std::string TrainSummaryJson(const trainer::TrainSummary& summary,
                             const std::vector<ServerStats>& servers,
                             const std::optional<EvalFigures>& eval,
                             const std::optional<EarlyStoppingReport>& early_stopping = {});

}  // namespace ember::local
