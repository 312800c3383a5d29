// ModelConfig loader and validation.
#include "trainer/model_config.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

#include "common/yaml_util.h"

namespace ember::trainer {
namespace {

// Largest accepted layer width or slot count: keeps every buffer size far from overflow.
constexpr uint32_t kMaxWidth = 1u << 16;
constexpr uint32_t kMaxNegatives = 1024;
constexpr LossKind kLosses[] = {LossKind::kInBatchSoftmax, LossKind::kSampledSoftmax,
                                LossKind::kBce, LossKind::kBpr};

Status CheckWidth(const std::string& field, uint32_t value) {
  if (value == 0) return InvalidArgument(field + ": must be > 0");
  if (value > kMaxWidth) {
    return InvalidArgument(field + ": " + std::to_string(value) + " exceeds the limit of " +
                           std::to_string(kMaxWidth));
  }
  return Status::Ok();
}

Status CheckValidFields(const ModelConfig& config, const std::string& where) {
  RETURN_IF_ERROR(CheckWidth(where + ".embedding_dim", config.embedding_dim));
  RETURN_IF_ERROR(CheckWidth(where + ".user_slots", config.user_slots));
  RETURN_IF_ERROR(CheckWidth(where + ".item_slots", config.item_slots));
  for (size_t i = 0; i < config.hidden.size(); ++i) {
    RETURN_IF_ERROR(CheckWidth(where + ".hidden[" + std::to_string(i) + "]", config.hidden[i]));
  }
  RETURN_IF_ERROR(CheckWidth(where + ".output_dim", config.output_dim));
  const uint64_t widest_input =
      uint64_t{std::max(config.user_slots, config.item_slots)} * config.embedding_dim;
  if (widest_input > kMaxWidth) {
    return InvalidArgument(where + ": slots * embedding_dim = " + std::to_string(widest_input) +
                           " exceeds the limit of " + std::to_string(kMaxWidth));
  }
  if (!(config.temperature > 0) || !std::isfinite(config.temperature)) {
    return InvalidArgument(where + ".temperature: must be a finite value > 0");
  }
  if (!(config.learning_rate >= 0) || !std::isfinite(config.learning_rate)) {
    return InvalidArgument(where + ".learning_rate: must be a finite value >= 0");
  }
  if (!(config.beta1 >= 0 && config.beta1 < 1)) {
    return InvalidArgument(where + ".beta1: must be in [0, 1)");
  }
  if (!(config.beta2 >= 0 && config.beta2 < 1)) {
    return InvalidArgument(where + ".beta2: must be in [0, 1)");
  }
  if (!(config.epsilon > 0) || !std::isfinite(config.epsilon)) {
    return InvalidArgument(where + ".epsilon: must be a finite value > 0");
  }
  const bool sampled = config.loss != LossKind::kInBatchSoftmax;
  if (sampled && config.negatives == 0) {
    return InvalidArgument(where + ".negatives: loss " + std::string(LossName(config.loss)) +
                           " needs sampled negatives (> 0) per positive");
  }
  if (config.negatives > kMaxNegatives) {
    return InvalidArgument(where + ".negatives: " + std::to_string(config.negatives) +
                           " exceeds the limit of " + std::to_string(kMaxNegatives));
  }
  return Status::Ok();
}

}  // namespace

std::string_view LossName(LossKind loss) {
  switch (loss) {
    case LossKind::kInBatchSoftmax: return "in_batch_softmax";
    case LossKind::kSampledSoftmax: return "sampled_softmax";
    case LossKind::kBce: return "bce";
    case LossKind::kBpr: return "bpr";
  }
  return "?";
}

Result<ModelConfig> ModelConfigFromYaml(const YAML::Node& node, std::string_view path) {
  ModelConfig config;
  const std::string where(path);
  if (!node.IsDefined() || node.IsNull()) return config;
  RETURN_IF_ERROR(config::RejectUnknownKeys(
      node, path,
      {"embedding_dim", "user_slots", "item_slots", "hidden", "output_dim", "temperature",
       "loss", "negatives", "learning_rate", "beta1", "beta2", "epsilon", "seed", "tf32",
       "cuda_graphs"}));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "embedding_dim", &config.embedding_dim));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "user_slots", &config.user_slots));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "item_slots", &config.item_slots));
  if (node["hidden"].IsDefined() && !node["hidden"].IsNull() && !node["hidden"].IsSequence()) {
    return InvalidArgument(where + ".hidden: expected a list of layer widths, e.g. [256, 128]");
  }
  RETURN_IF_ERROR(config::ReadOptional(node, path, "hidden", &config.hidden));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "output_dim", &config.output_dim));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "temperature", &config.temperature));
  std::string loss(LossName(config.loss));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "loss", &loss));
  const auto* known = std::find_if(std::begin(kLosses), std::end(kLosses),
                                   [&](LossKind kind) { return LossName(kind) == loss; });
  if (known == std::end(kLosses)) {
    return InvalidArgument(where + ".loss: '" + loss +
                           "' is not one of in_batch_softmax, sampled_softmax, bce, bpr");
  }
  config.loss = *known;
  RETURN_IF_ERROR(config::ReadOptional(node, path, "negatives", &config.negatives));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "learning_rate", &config.learning_rate));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "beta1", &config.beta1));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "beta2", &config.beta2));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "epsilon", &config.epsilon));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "seed", &config.seed));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "tf32", &config.tf32));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "cuda_graphs", &config.cuda_graphs));
  RETURN_IF_ERROR(CheckValidFields(config, where));
  return config;
}

Status ValidateModelConfig(const ModelConfig& config) { return CheckValidFields(config, "model"); }

}  // namespace ember::trainer
