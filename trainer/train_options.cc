// TrainOptions loader.
#include "trainer/train_options.h"

#include "common/yaml_util.h"

namespace ember::trainer {

Result<TrainOptions> TrainOptionsFromYaml(const YAML::Node& node, std::string_view path) {
  TrainOptions options;
  if (!node.IsDefined() || node.IsNull()) return InvalidArgument(std::string(path) + ": missing");
  RETURN_IF_ERROR(config::RejectUnknownKeys(
      node, path,
      {"steps", "epochs", "batch_size", "backend", "log_every", "user_tables", "item_tables",
       "pipeline", "wire_fp16", "sampling_correction", "eval_k", "eval_batch_users"}));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "steps", &options.steps));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "epochs", &options.epochs));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "batch_size", &options.batch_size));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "backend", &options.backend));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "log_every", &options.log_every));
  RETURN_IF_ERROR(config::ReadRequired(node, path, "user_tables", &options.user_tables));
  RETURN_IF_ERROR(config::ReadRequired(node, path, "item_tables", &options.item_tables));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "pipeline", &options.pipeline));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "wire_fp16", &options.wire_fp16));
  RETURN_IF_ERROR(
      config::ReadOptional(node, path, "sampling_correction", &options.sampling_correction));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "eval_k", &options.eval_k));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "eval_batch_users", &options.eval_batch_users));
  const std::string where(path);
  if (options.batch_size < 2) return InvalidArgument(where + ".batch_size: must be >= 2");
  if (options.steps == 0 && options.epochs == 0) {
    return InvalidArgument(where + ": one of steps or epochs must be > 0");
  }
  if (options.backend != "cpu" && options.backend != "cuda" && options.backend != "auto") {
    return InvalidArgument(where + ".backend: '" + options.backend +
                           "' is not one of cpu, cuda, auto");
  }
  if (options.user_tables.empty() || options.item_tables.empty()) {
    return InvalidArgument(where + ": user_tables and item_tables must name at least one table");
  }
  if (options.eval_k == 0 || options.eval_batch_users == 0) {
    return InvalidArgument(where + ": eval_k and eval_batch_users must be > 0");
  }
  return options;
}

}  // namespace ember::trainer
