// Table configuration: the YAML loader and the validation rules for TableSpec.
//
// A config declares its tables as a YAML sequence; only name and dim are required:
//
//   - name: user_id
//     dim: 64
//     seed: 11                                           # default: HashName(name)
//     initializer: {kind: normal, mean: 0, stddev: 0.01}  # zeros | normal | uniform (low, high)
//     optimizer: {kind: adagrad, learning_rate: 0.05, initial_accumulator: 0.0, epsilon: 1e-10}
//
// Optimizer fields by kind: sgd: learning_rate; adagrad: learning_rate, initial_accumulator,
// epsilon; adam: learning_rate, beta1, beta2, epsilon; ftrl: learning_rate (alpha), ftrl_beta,
// l1, l2; and weight_decay (an L2 penalty on pushed rows) for all but ftrl. A field that the
// chosen kind does not use is rejected like any unknown key, and so is an initializer field that
// its kind does not use. `optimizer: adam` and `initializer: zeros`
// are shorthands for a section holding only the kind. Errors name the field by its path, e.g.
// "tables[0].optimizer.learing_rate: unknown field (...)".
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/table_spec.h"

namespace ember::embedding {

// The widest row a table may declare.
inline constexpr uint32_t kMaxTableDim = 4096;
// The longest table name. Names use letters, digits, '_', '-' and '.', and do not start with '.'
// (they become parts of file names in checkpoints).
inline constexpr size_t kMaxTableNameLength = 128;

// OK when `name` is a valid table name; InvalidArgument naming it and the rule otherwise.
Status ValidateTableName(std::string_view name);

// Config names of the kinds: "sgd", "adagrad", "adam", "ftrl"; "zeros", "normal", "uniform".
std::string_view OptimizerKindName(OptimizerKind kind);
std::string_view InitializerKindName(InitializerKind kind);
// The kind with that config name; InvalidArgument listing the known names otherwise.
Result<OptimizerKind> OptimizerKindFromName(std::string_view name);
Result<InitializerKind> InitializerKindFromName(std::string_view name);

// Range checks for one section. The message names the field ("optimizer.beta1 must be ...").
// Every field is checked whatever the kind, so a valid spec stays valid if its kind changes.
Status ValidateOptimizerSpec(const OptimizerSpec& spec);
Status ValidateInitializerSpec(const InitializerSpec& spec);
// A valid name (ValidateTableName), 1 <= dim <= kMaxTableDim, and both sections valid. The message names the table
// and the field: "table 'user_id': optimizer.learning_rate must be > 0 (got -1)".
Status ValidateTableSpec(const TableSpec& spec);

// Reads and validates one table mapping; `path` (e.g. "tables[0]") prefixes every error.
Result<TableSpec> TableSpecFromYaml(const YAML::Node& node, std::string_view path);
// Reads a sequence of table mappings; element i is reported as "<path>[i]". Rejects two tables
// with the same name. An empty sequence gives an empty vector.
Result<std::vector<TableSpec>> TableSpecsFromYaml(const YAML::Node& tables, std::string_view path);

}  // namespace ember::embedding
