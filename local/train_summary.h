// The record a training run leaves for scripts (`ember train --summary-json`, and `ember cluster`
// for each of its trainers): the run's figures, each server's stats summed over its tables, and
// the evaluation when there was one, as one JSON object. Figures that are not finite (a loss that
// diverged to NaN) are written as null, so the record always parses. Reentrant.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/server_stats.h"
#include "trainer/ranking_metrics.h"
#include "trainer/trainer.h"

namespace ember::local {

// Leave-one-out ranking of the trained model and of the most-popular-item baseline.
struct EvalFigures {
  trainer::RankingResult model;
  trainer::RankingResult popularity;
  std::string protocol = "sampled";  // TrainOptions::eval_protocol
  std::optional<trainer::RankingResult> validation;  // with data.interactions.validation
};

// Mean time per step spent waiting for the other trainers, in ms.
double WaitPerStepMs(const trainer::TrainSummary& summary);

// A server's table stats added up over its tables (name left empty).
TableStats SumTableStats(const ServerStats& server);

// {"steps", "samples", "seconds", "samples_per_second", "wait_ms_per_step", "backend",
//  "loss_start", "loss_end", "servers": [{"id", "rows", ...}], "eval": {...} when given},
// indented, ending in a newline.
std::string TrainSummaryJson(const trainer::TrainSummary& summary,
                             const std::vector<ServerStats>& servers,
                             const std::optional<EvalFigures>& eval);

}  // namespace ember::local
