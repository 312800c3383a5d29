// Table configuration: YAML loading and validation of TableSpec.
#include "embedding/table_config.h"

#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "common/hash.h"
#include "common/yaml_util.h"
#include "embedding/admission_filter.h"

namespace ember::embedding {
namespace {

constexpr std::string_view kOptimizerNames = "sgd, adagrad, adam, ftrl";
constexpr std::string_view kInitializerNames = "zeros, normal, uniform";

std::string FormatNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

// InvalidArgument("<field> must be <rule> (got <value>)") unless `ok`.
Status Require(bool ok, std::string_view field, std::string_view rule, double value) {
  if (ok) return Status::Ok();
  return InvalidArgument(std::string(field) + " must be " + std::string(rule) + " (got " +
                         FormatNumber(value) + ")");
}

bool IsPositive(float x) { return std::isfinite(x) && x > 0.0f; }
bool IsNonNegative(float x) { return std::isfinite(x) && x >= 0.0f; }
bool IsDecay(float x) { return x >= 0.0f && x < 1.0f; }  // false for NaN

// Reads the section's "kind" when present, leaving *kind (its default) when absent.
template <typename Kind>
Status ReadKind(const YAML::Node& section, const std::string& path,
                Result<Kind> (*from_name)(std::string_view), Kind* kind) {
  std::string name;
  RETURN_IF_ERROR(config::ReadOptional(section, path, "kind", &name));
  if (name.empty()) return Status::Ok();
  Result<Kind> parsed = from_name(name);
  if (!parsed.ok()) return parsed.status().WithContext(path + ".kind");
  *kind = *parsed;
  return Status::Ok();
}

bool IsKindShorthand(const YAML::Node& section) { return section.IsScalar(); }

Status ReadOptimizer(const YAML::Node& section, const std::string& path, OptimizerSpec* spec) {
  if (!section.IsDefined() || section.IsNull()) return Status::Ok();
  if (IsKindShorthand(section)) {
    Result<OptimizerKind> kind = OptimizerKindFromName(section.Scalar());
    if (!kind.ok()) return kind.status().WithContext(path);
    spec->kind = *kind;
    return Status::Ok();
  }
  if (!section.IsMap()) return InvalidArgument(path + ": expected a mapping or an optimizer name");
  RETURN_IF_ERROR(ReadKind(section, path, &OptimizerKindFromName, &spec->kind));
  switch (spec->kind) {
    case OptimizerKind::kSgd:
      RETURN_IF_ERROR(
          config::RejectUnknownKeys(section, path, {"kind", "learning_rate", "weight_decay"}));
      break;
    case OptimizerKind::kAdagrad:
      RETURN_IF_ERROR(config::RejectUnknownKeys(
          section, path,
          {"kind", "learning_rate", "initial_accumulator", "epsilon", "weight_decay"}));
      break;
    case OptimizerKind::kAdam:
      RETURN_IF_ERROR(config::RejectUnknownKeys(
          section, path,
          {"kind", "learning_rate", "beta1", "beta2", "epsilon", "weight_decay"}));
      break;
    case OptimizerKind::kFtrl:
      RETURN_IF_ERROR(config::RejectUnknownKeys(
          section, path, {"kind", "learning_rate", "ftrl_beta", "l1", "l2"}));
      break;
  }
  // Keys the kind does not use were rejected above, so reading every field is safe.
  RETURN_IF_ERROR(config::ReadOptional(section, path, "learning_rate", &spec->learning_rate));
  RETURN_IF_ERROR(
      config::ReadOptional(section, path, "initial_accumulator", &spec->initial_accumulator));
  RETURN_IF_ERROR(config::ReadOptional(section, path, "epsilon", &spec->epsilon));
  RETURN_IF_ERROR(config::ReadOptional(section, path, "beta1", &spec->beta1));
  RETURN_IF_ERROR(config::ReadOptional(section, path, "beta2", &spec->beta2));
  RETURN_IF_ERROR(config::ReadOptional(section, path, "ftrl_beta", &spec->ftrl_beta));
  RETURN_IF_ERROR(config::ReadOptional(section, path, "l1", &spec->l1));
  RETURN_IF_ERROR(config::ReadOptional(section, path, "l2", &spec->l2));
  RETURN_IF_ERROR(config::ReadOptional(section, path, "weight_decay", &spec->weight_decay));
  return Status::Ok();
}

Status ReadInitializer(const YAML::Node& section, const std::string& path,
                       InitializerSpec* spec) {
  if (!section.IsDefined() || section.IsNull()) return Status::Ok();
  if (IsKindShorthand(section)) {
    Result<InitializerKind> kind = InitializerKindFromName(section.Scalar());
    if (!kind.ok()) return kind.status().WithContext(path);
    spec->kind = *kind;
    return Status::Ok();
  }
  if (!section.IsMap()) {
    return InvalidArgument(path + ": expected a mapping or an initializer name");
  }
  RETURN_IF_ERROR(ReadKind(section, path, &InitializerKindFromName, &spec->kind));
  switch (spec->kind) {
    case InitializerKind::kZeros:
      RETURN_IF_ERROR(config::RejectUnknownKeys(section, path, {"kind"}));
      break;
    case InitializerKind::kNormal:
      RETURN_IF_ERROR(config::RejectUnknownKeys(section, path, {"kind", "mean", "stddev"}));
      break;
    case InitializerKind::kUniform:
      RETURN_IF_ERROR(config::RejectUnknownKeys(section, path, {"kind", "low", "high"}));
      break;
  }
  RETURN_IF_ERROR(config::ReadOptional(section, path, "mean", &spec->mean));
  RETURN_IF_ERROR(config::ReadOptional(section, path, "stddev", &spec->stddev));
  RETURN_IF_ERROR(config::ReadOptional(section, path, "low", &spec->low));
  RETURN_IF_ERROR(config::ReadOptional(section, path, "high", &spec->high));
  return Status::Ok();
}

}  // namespace

std::string_view OptimizerKindName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd:
      return "sgd";
    case OptimizerKind::kAdagrad:
      return "adagrad";
    case OptimizerKind::kAdam:
      return "adam";
    case OptimizerKind::kFtrl:
      return "ftrl";
  }
  return "unknown";
}

std::string_view InitializerKindName(InitializerKind kind) {
  switch (kind) {
    case InitializerKind::kZeros:
      return "zeros";
    case InitializerKind::kNormal:
      return "normal";
    case InitializerKind::kUniform:
      return "uniform";
  }
  return "unknown";
}

Result<OptimizerKind> OptimizerKindFromName(std::string_view name) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdagrad, OptimizerKind::kAdam,
                             OptimizerKind::kFtrl}) {
    if (OptimizerKindName(kind) == name) return kind;
  }
  return InvalidArgument("unknown optimizer '" + std::string(name) + "' (known: " +
                         std::string(kOptimizerNames) + ")");
}

Result<InitializerKind> InitializerKindFromName(std::string_view name) {
  for (InitializerKind kind :
       {InitializerKind::kZeros, InitializerKind::kNormal, InitializerKind::kUniform}) {
    if (InitializerKindName(kind) == name) return kind;
  }
  return InvalidArgument("unknown initializer '" + std::string(name) + "' (known: " +
                         std::string(kInitializerNames) + ")");
}

Status ValidateOptimizerSpec(const OptimizerSpec& spec) {
  if (OptimizerKindName(spec.kind) == "unknown") {
    return InvalidArgument("optimizer.kind " + std::to_string(static_cast<int>(spec.kind)) +
                           " is not one of " + std::string(kOptimizerNames));
  }
  RETURN_IF_ERROR(Require(IsPositive(spec.learning_rate), "optimizer.learning_rate", "> 0",
                          spec.learning_rate));
  RETURN_IF_ERROR(Require(IsNonNegative(spec.initial_accumulator),
                          "optimizer.initial_accumulator", ">= 0", spec.initial_accumulator));
  RETURN_IF_ERROR(Require(IsPositive(spec.epsilon), "optimizer.epsilon", "> 0", spec.epsilon));
  RETURN_IF_ERROR(Require(IsDecay(spec.beta1), "optimizer.beta1", "in [0, 1)", spec.beta1));
  RETURN_IF_ERROR(Require(IsDecay(spec.beta2), "optimizer.beta2", "in [0, 1)", spec.beta2));
  RETURN_IF_ERROR(Require(IsNonNegative(spec.l1), "optimizer.l1", ">= 0", spec.l1));
  RETURN_IF_ERROR(Require(IsNonNegative(spec.l2), "optimizer.l2", ">= 0", spec.l2));
  RETURN_IF_ERROR(
      Require(IsNonNegative(spec.ftrl_beta), "optimizer.ftrl_beta", ">= 0", spec.ftrl_beta));
  RETURN_IF_ERROR(Require(IsNonNegative(spec.weight_decay), "optimizer.weight_decay", ">= 0",
                          spec.weight_decay));
  if (spec.kind == OptimizerKind::kFtrl && spec.weight_decay != 0.0f) {
    return InvalidArgument("optimizer.weight_decay: not used by ftrl (its l2 is the L2 penalty)");
  }
  return Status::Ok();
}

Status ValidateInitializerSpec(const InitializerSpec& spec) {
  if (InitializerKindName(spec.kind) == "unknown") {
    return InvalidArgument("initializer.kind " + std::to_string(static_cast<int>(spec.kind)) +
                           " is not one of " + std::string(kInitializerNames));
  }
  RETURN_IF_ERROR(
      Require(std::isfinite(spec.mean), "initializer.mean", "finite", spec.mean));
  RETURN_IF_ERROR(
      Require(IsNonNegative(spec.stddev), "initializer.stddev", ">= 0", spec.stddev));
  RETURN_IF_ERROR(Require(std::isfinite(spec.low), "initializer.low", "finite", spec.low));
  RETURN_IF_ERROR(Require(std::isfinite(spec.high), "initializer.high", "finite", spec.high));
  RETURN_IF_ERROR(Require(spec.low <= spec.high, "initializer.low",
                          "<= initializer.high (" + FormatNumber(spec.high) + ")", spec.low));
  return Status::Ok();
}

Status ValidateTableName(std::string_view name) {
  const std::string context = "table '" + std::string(name) + "'";
  if (name.empty()) return InvalidArgument(context + ": name must not be empty");
  if (name.size() > kMaxTableNameLength) {
    return InvalidArgument(context + ": name must be at most " +
                           std::to_string(kMaxTableNameLength) + " characters (got " +
                           std::to_string(name.size()) + ")");
  }
  if (name.front() == '.') return InvalidArgument(context + ": name must not start with '.'");
  for (char c : name) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
    if (!safe) {
      return InvalidArgument(context +
                             ": name may hold only letters, digits, '_', '-' and '.'");
    }
  }
  return Status::Ok();
}

Status ValidateTableSpec(const TableSpec& spec) {
  const std::string context = "table '" + spec.name + "'";
  RETURN_IF_ERROR(ValidateTableName(spec.name));
  RETURN_IF_ERROR_CTX(Require(spec.dim >= 1 && spec.dim <= kMaxTableDim, "dim",
                              "in [1, " + std::to_string(kMaxTableDim) + "]", spec.dim),
                      context);
  RETURN_IF_ERROR_CTX(ValidateOptimizerSpec(spec.optimizer), context);
  RETURN_IF_ERROR_CTX(ValidateInitializerSpec(spec.initializer), context);
  RETURN_IF_ERROR_CTX(Require(spec.admit_after <= AdmissionFilter::kMaxAdmitAfter, "admit_after",
                              "at most " + std::to_string(AdmissionFilter::kMaxAdmitAfter),
                              spec.admit_after),
                      context);
  return Status::Ok();
}

Result<TableSpec> TableSpecFromYaml(const YAML::Node& node, std::string_view path) {
  const std::string prefix(path);
  if (!node.IsMap()) return InvalidArgument(prefix + ": expected a mapping with a name and a dim");
  RETURN_IF_ERROR(config::RejectUnknownKeys(node, path,
                                            {"name", "dim", "seed", "initializer", "optimizer",
                                             "admit_after", "ttl_seconds"}));
  TableSpec spec;
  RETURN_IF_ERROR(config::ReadRequired(node, path, "name", &spec.name));
  int64_t dim = 0;  // read wide so that a negative or huge value gets a range error
  RETURN_IF_ERROR(config::ReadRequired(node, path, "dim", &dim));
  if (dim < 1 || dim > kMaxTableDim) {
    return InvalidArgument(prefix + ".dim: must be in [1, " + std::to_string(kMaxTableDim) +
                           "] (got " + std::to_string(dim) + ")");
  }
  spec.dim = static_cast<uint32_t>(dim);
  spec.seed = HashName(spec.name);
  RETURN_IF_ERROR(config::ReadOptional(node, path, "seed", &spec.seed));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "admit_after", &spec.admit_after));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "ttl_seconds", &spec.ttl_seconds));
  RETURN_IF_ERROR(ReadInitializer(node["initializer"], prefix + ".initializer", &spec.initializer));
  RETURN_IF_ERROR(ReadOptimizer(node["optimizer"], prefix + ".optimizer", &spec.optimizer));
  RETURN_IF_ERROR_CTX(ValidateTableSpec(spec), path);
  return spec;
}

Result<std::vector<TableSpec>> TableSpecsFromYaml(const YAML::Node& tables, std::string_view path) {
  const std::string prefix(path);
  if (!tables.IsSequence()) return InvalidArgument(prefix + ": expected a sequence of tables");
  std::vector<TableSpec> specs;
  std::map<std::string, size_t, std::less<>> index_of_name;
  for (size_t i = 0; i < tables.size(); ++i) {
    const std::string element = prefix + "[" + std::to_string(i) + "]";
    ASSIGN_OR_RETURN(TableSpec spec, TableSpecFromYaml(tables[i], element));
    auto [it, inserted] = index_of_name.emplace(spec.name, i);
    if (!inserted) {
      return InvalidArgument(element + ".name: table '" + spec.name + "' is already declared at " +
                             prefix + "[" + std::to_string(it->second) + "]");
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

}  // namespace ember::embedding
