// Early stopping on a validation split: when to evaluate during training, which evaluation is the
// best so far, when patience runs out, and what happens after (`train.early_stopping`).
//
// The best evaluation has the highest validation HR@k; NDCG@k breaks ties, and an exact tie goes
// to the earlier one (fewer epochs for the same figures). Patience counts evaluations since the
// best one.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "trainer/ranking_metrics.h"

namespace ember::trainer {

// What a run does once it stopped.
enum class AfterEarlyStop {
  kRestoreBest,  // load the best evaluation's state (servers' rows and dense weights) back
  kRetrain,      // train again from scratch on all training data, validation items included,
                 // for as many epochs as the best evaluation had seen
  kKeepLast,     // keep the state training stopped in
};
std::string_view AfterEarlyStopName(AfterEarlyStop after);

struct EarlyStoppingOptions {
  uint32_t every_epochs = 0;  // evaluate on validation every N epochs ...
  uint32_t every_steps = 0;   // ... or every N steps (at most one is set; neither: off)
  uint32_t patience = 3;      // stop after this many evaluations without a better one
  AfterEarlyStop then = AfterEarlyStop::kRestoreBest;
  // Where the best state is kept for kRestoreBest, as the servers and the trainer both see it
  // (shared storage when they run on different hosts). Empty: a fresh temporary directory,
  // removed at the end.
  std::string dir;

  bool enabled() const { return every_epochs > 0 || every_steps > 0; }
  // Whether the run loads rows back into the servers at the end (which takes an admin key).
  bool reloads_rows() const { return enabled() && then != AfterEarlyStop::kKeepLast; }
};

// Reads a `train.early_stopping:` mapping: every_epochs | every_steps, patience,
// then (restore_best | retrain | keep_last) and dir. Errors name the field.
Result<EarlyStoppingOptions> EarlyStoppingOptionsFromYaml(const YAML::Node& node,
                                                          std::string_view path);

// The steps after which a run of `total_steps` steps, `steps_per_epoch` (fractional) steps an
// epoch, evaluates: every N epochs (rounded up to a whole step) or every N steps, and the last
// step.
std::vector<uint32_t> EvaluationSteps(const EarlyStoppingOptions& options, uint32_t total_steps,
                                      double steps_per_epoch);

struct ValidationPoint {
  uint32_t step = 0;
  double epoch = 0;  // epochs of training data seen by then
  double hit_rate = 0;
  double ndcg = 0;
};

class EarlyStopping {
 public:
  explicit EarlyStopping(uint32_t patience) : patience_(patience) {}

  // Records an evaluation; true when it is the best so far.
  bool Record(const ValidationPoint& point);
  // True once `patience` evaluations in a row were no better than the best.
  bool exhausted() const { return since_best_ >= patience_ && !history_.empty(); }

  const std::vector<ValidationPoint>& history() const { return history_; }
  // The best evaluation (none before the first Record).
  std::optional<ValidationPoint> best() const;

 private:
  uint32_t patience_;
  std::vector<ValidationPoint> history_;
  size_t best_index_ = 0;
  uint32_t since_best_ = 0;
};

// True when `a` is better than `b`: higher HR, or equal HR and higher NDCG.
bool BetterValidation(const ValidationPoint& a, const ValidationPoint& b);

}  // namespace ember::trainer
