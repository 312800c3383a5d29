// Helpers for turning YAML config sections into Options structs with errors that name the field.
//
// Each module owns the loader for its own section (e.g. embedding/table_config.h); these helpers
// keep the error wording uniform: `InvalidArgument("<path>.<key>: <what was wrong>")`.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ember::config {

// The largest config file LoadYamlFile reads.
constexpr uint64_t kMaxConfigFileBytes = uint64_t{16} << 20;
// Parses a YAML file; the error names the file and the line that failed, or the size limit.
Result<YAML::Node> LoadYamlFile(const std::string& path);

// Returns `parse()`, or InvalidArgument naming `file` when yaml-cpp throws from inside it (a node
// of a type the loader did not expect, a complex key): the one place a config loader's yaml-cpp
// exceptions stop. The loaders' own checks name the key path; this names the file and the line.
template <typename Parse>
auto CatchYamlErrors(const std::string& file, Parse&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const YAML::Exception& e) {
    return InvalidArgument("config file '" + file + "': " + e.what());
  }
}

// Reads node[key] into *out when present; leaves *out (its default) when absent. A present value
// of the wrong type gives InvalidArgument naming "path.key".
template <typename T>
Status ReadOptional(const YAML::Node& node, std::string_view path, const char* key, T* out) {
  if (!node.IsMap()) return InvalidArgument(std::string(path) + ": expected a mapping");
  const YAML::Node value = node[key];
  if (!value.IsDefined() || value.IsNull()) return Status::Ok();
  try {
    *out = value.as<T>();
  } catch (const YAML::Exception& e) {
    // Values set by an override (common/config_override.h) come from no line of the file.
    const std::string line = value.Mark().is_null()
                                 ? std::string()
                                 : " (line " + std::to_string(value.Mark().line + 1) + ")";
    return InvalidArgument(std::string(path) + "." + key + ": cannot read '" +
                           (value.IsScalar() ? value.Scalar() : std::string("<non-scalar>")) +
                           "'" + line);
  }
  return Status::Ok();
}

// Like ReadOptional, but a missing key is an error.
template <typename T>
Status ReadRequired(const YAML::Node& node, std::string_view path, const char* key, T* out) {
  if (!node.IsMap()) return InvalidArgument(std::string(path) + ": expected a mapping");
  if (!node[key].IsDefined() || node[key].IsNull()) {
    return InvalidArgument(std::string(path) + "." + key + ": required field is missing");
  }
  return ReadOptional(node, path, key, out);
}

// Fails with InvalidArgument naming any key of `node` that is not in `known`: catches typos
// such as "learing_rate" instead of silently using a default.
Status RejectUnknownKeys(const YAML::Node& node, std::string_view path,
                         std::initializer_list<std::string_view> known);

}  // namespace ember::config
