// YAML loading helpers.
#include "common/yaml_util.h"

#include <algorithm>

#include "common/file_io.h"

namespace ember::config {

Result<YAML::Node> LoadYamlFile(const std::string& path) {
  auto text = ReadWholeFile(path, kMaxConfigFileBytes);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return NotFound("config file '" + path + "' cannot be opened");
    }
    return text.status().WithContext("config file");
  }
  try {
    return YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("config file '" + path + "': " + e.what());
  }
}

Status RejectUnknownKeys(const YAML::Node& node, std::string_view path,
                         std::initializer_list<std::string_view> known) {
  if (!node.IsMap()) return InvalidArgument(std::string(path) + ": expected a mapping");
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      return InvalidArgument(std::string(path) + ": keys must be plain names (line " +
                             std::to_string(entry.first.Mark().line + 1) + ")");
    }
    const std::string key = entry.first.as<std::string>();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      std::string list;
      for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return InvalidArgument(std::string(path) + "." + key + ": unknown field (known: " + list +
                             ")");
    }
  }
  return Status::Ok();
}

}  // namespace ember::config
