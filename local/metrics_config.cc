// MetricsConfig loader.
#include "local/metrics_config.h"

#include <yaml-cpp/yaml.h>

#include <string>

#include "common/yaml_util.h"

namespace ember::local {

Result<MetricsConfig> MetricsConfigFromYaml(const YAML::Node& node, std::string_view path) {
  MetricsConfig config;
  if (!node.IsDefined() || node.IsNull()) return config;
  RETURN_IF_ERROR(config::RejectUnknownKeys(node, path, {"scheduler", "servers", "trainers"}));
  for (auto [key, address] :
       {std::pair{"scheduler", &config.scheduler}, std::pair{"servers", &config.servers},
        std::pair{"trainers", &config.trainers}}) {
    std::string text;
    RETURN_IF_ERROR(config::ReadOptional(node, path, key, &text));
    if (text.empty()) continue;
    ASSIGN_OR_RETURN(*address, ParseMetricsAddress(text, std::string(path) + "." + key));
  }
  return config;
}

}  // namespace ember::local
