// Early stopping: its options, evaluation schedule and best-so-far bookkeeping.
#include "trainer/early_stopping.h"

#include <algorithm>
#include <cmath>

#include "common/yaml_util.h"

namespace ember::trainer {

std::string_view AfterEarlyStopName(AfterEarlyStop after) {
  switch (after) {
    case AfterEarlyStop::kRestoreBest: return "restore_best";
    case AfterEarlyStop::kRetrain: return "retrain";
    case AfterEarlyStop::kKeepLast: return "keep_last";
  }
  return "?";
}

Result<EarlyStoppingOptions> EarlyStoppingOptionsFromYaml(const YAML::Node& node,
                                                          std::string_view path) {
  EarlyStoppingOptions options;
  const std::string where(path);
  if (!node.IsMap()) return InvalidArgument(where + ": must be a mapping");
  RETURN_IF_ERROR(config::RejectUnknownKeys(
      node, path, {"every_epochs", "every_steps", "patience", "then", "dir"}));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "every_epochs", &options.every_epochs));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "every_steps", &options.every_steps));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "patience", &options.patience));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "dir", &options.dir));
  std::string then(AfterEarlyStopName(options.then));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "then", &then));
  bool known = false;
  for (AfterEarlyStop after : {AfterEarlyStop::kRestoreBest, AfterEarlyStop::kRetrain,
                               AfterEarlyStop::kKeepLast}) {
    if (then == AfterEarlyStopName(after)) {
      options.then = after;
      known = true;
    }
  }
  if (!known) {
    return InvalidArgument(where + ".then: '" + then +
                           "' is not one of restore_best, retrain, keep_last");
  }
  if ((options.every_epochs > 0) == (options.every_steps > 0)) {
    return InvalidArgument(where + ": set exactly one of every_epochs and every_steps (> 0)");
  }
  if (options.patience == 0) return InvalidArgument(where + ".patience: must be > 0");
  return options;
}

std::vector<uint32_t> EvaluationSteps(const EarlyStoppingOptions& options, uint32_t total_steps,
                                      double steps_per_epoch) {
  std::vector<uint32_t> steps;
  if (!options.enabled() || total_steps == 0) return steps;
  for (uint64_t n = 1;; ++n) {
    const double at = options.every_steps > 0
                          ? static_cast<double>(n * options.every_steps)
                          : std::ceil(n * options.every_epochs * steps_per_epoch - 1e-9);
    if (at >= total_steps) break;
    const uint32_t step = static_cast<uint32_t>(std::max(1.0, at));
    if (steps.empty() || steps.back() < step) steps.push_back(step);
  }
  steps.push_back(total_steps);
  return steps;
}

bool BetterValidation(const ValidationPoint& a, const ValidationPoint& b) {
  if (a.hit_rate != b.hit_rate) return a.hit_rate > b.hit_rate;
  return a.ndcg > b.ndcg;
}

bool EarlyStopping::Record(const ValidationPoint& point) {
  history_.push_back(point);
  if (history_.size() == 1 || BetterValidation(point, history_[best_index_])) {
    best_index_ = history_.size() - 1;
    since_best_ = 0;
    return true;
  }
  ++since_best_;
  return false;
}

std::optional<ValidationPoint> EarlyStopping::best() const {
  if (history_.empty()) return std::nullopt;
  return history_[best_index_];
}

}  // namespace ember::trainer
