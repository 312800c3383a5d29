// TrainOptions loader.
#include "trainer/train_options.h"

#include "common/yaml_util.h"

namespace ember::trainer {
namespace {

// The many-trainer keys: mode, staleness, bsp_combine, on_trainer_failure and the timeouts.
Status ReadSyncOptions(const YAML::Node& node, const std::string& path, SyncOptions* sync) {
  std::string mode = "asp", combine = "mean", failure = "stop";
  RETURN_IF_ERROR(config::ReadOptional(node, path, "mode", &mode));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "bsp_combine", &combine));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "on_trainer_failure", &failure));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "staleness", &sync->staleness));
  uint32_t trainer_timeout = static_cast<uint32_t>(sync->trainer_timeout.count());
  uint32_t clock_timeout = static_cast<uint32_t>(sync->clock_timeout.count());
  RETURN_IF_ERROR(config::ReadOptional(node, path, "trainer_timeout_ms", &trainer_timeout));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "clock_timeout_ms", &clock_timeout));
  auto parsed_mode = ParseSyncMode(mode);
  if (!parsed_mode.ok()) return parsed_mode.status().WithContext(path + ".mode");
  auto parsed_combine = ParseCombine(combine);
  if (!parsed_combine.ok()) return parsed_combine.status().WithContext(path + ".bsp_combine");
  auto parsed_failure = ParseTrainerFailurePolicy(failure);
  if (!parsed_failure.ok()) {
    return parsed_failure.status().WithContext(path + ".on_trainer_failure");
  }
  if (trainer_timeout < 100 || clock_timeout < 100) {
    return InvalidArgument(path + ": trainer_timeout_ms and clock_timeout_ms must be >= 100");
  }
  sync->mode = *parsed_mode;
  sync->combine = *parsed_combine;
  sync->on_trainer_failure = *parsed_failure;
  sync->trainer_timeout = std::chrono::milliseconds(trainer_timeout);
  sync->clock_timeout = std::chrono::milliseconds(clock_timeout);
  return Status::Ok();
}

}  // namespace

Result<TrainOptions> TrainOptionsFromYaml(const YAML::Node& node, std::string_view path) {
  TrainOptions options;
  if (!node.IsDefined() || node.IsNull()) return InvalidArgument(std::string(path) + ": missing");
  RETURN_IF_ERROR(config::RejectUnknownKeys(
      node, path,
      {"steps", "epochs", "batch_size", "backend", "log_every", "user_tables", "item_tables",
       "pipeline", "lookahead", "wire_fp16", "sampling_correction", "eval_k", "eval_batch_users",
       "eval_protocol", "eval_test", "early_stopping", "mode",
       "staleness", "bsp_combine", "on_trainer_failure", "trainer_timeout_ms",
       "clock_timeout_ms", "dense"}));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "steps", &options.steps));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "epochs", &options.epochs));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "batch_size", &options.batch_size));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "backend", &options.backend));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "log_every", &options.log_every));
  // Optional here: a cluster that only serves (Python trainers) has no C++ towers to feed;
  // Trainer::Create checks them against the model.
  RETURN_IF_ERROR(config::ReadOptional(node, path, "user_tables", &options.user_tables));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "item_tables", &options.item_tables));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "pipeline", &options.pipeline));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "lookahead", &options.lookahead));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "wire_fp16", &options.wire_fp16));
  RETURN_IF_ERROR(
      config::ReadOptional(node, path, "sampling_correction", &options.sampling_correction));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "eval_k", &options.eval_k));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "eval_batch_users", &options.eval_batch_users));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "eval_protocol", &options.eval_protocol));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "eval_test", &options.eval_test));
  const std::string where(path);
  if (options.eval_protocol != "sampled" && options.eval_protocol != "full") {
    return InvalidArgument(where + ".eval_protocol: '" + options.eval_protocol +
                           "' is not one of sampled, full");
  }
  if (node["early_stopping"].IsDefined()) {
    ASSIGN_OR_RETURN(options.early_stopping,
                     EarlyStoppingOptionsFromYaml(node["early_stopping"], where + ".early_stopping"));
    if (options.early_stopping.every_epochs > 0 && options.epochs == 0) {
      return InvalidArgument(where + ".early_stopping.every_epochs: needs " + where +
                             ".epochs (the most epochs to train)");
    }
  }
  RETURN_IF_ERROR(ReadSyncOptions(node, where, &options.sync));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "dense", &options.dense));
  if (options.dense != "auto" && options.dense != "local" && options.dense != "servers") {
    return InvalidArgument(where + ".dense: '" + options.dense +
                           "' is not one of auto, local, servers");
  }
  if (options.pipeline && options.sync.synchronised()) {
    return InvalidArgument(where + ".pipeline: needs mode asp (bsp and ssp read every row after "
                                   "the step it depends on)");
  }
  if (options.batch_size < 2) return InvalidArgument(where + ".batch_size: must be >= 2");
  if (options.lookahead > kMaxLookahead) {
    return InvalidArgument(where + ".lookahead: " + std::to_string(options.lookahead) +
                           " batches drawn ahead is more than the " +
                           std::to_string(kMaxLookahead) + " allowed");
  }
  if (options.steps == 0 && options.epochs == 0) {
    return InvalidArgument(where + ": one of steps or epochs must be > 0");
  }
  if (options.backend != "cpu" && options.backend != "cuda" && options.backend != "auto") {
    return InvalidArgument(where + ".backend: '" + options.backend +
                           "' is not one of cpu, cuda, auto");
  }
  if (options.eval_k == 0 || options.eval_batch_users == 0) {
    return InvalidArgument(where + ": eval_k and eval_batch_users must be > 0");
  }
  return options;
}

}  // namespace ember::trainer
