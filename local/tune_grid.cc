// The tune grid, budget, trial read-back and choice.
#include "local/tune_grid.h"

#include <nlohmann/json.hpp>

#include <cctype>

#include "common/yaml_util.h"

namespace ember::local {

Result<GridAxis> ParseGridAxis(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return InvalidArgument("--grid '" + std::string(text) + "': " + why);
  };
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos) return bad("expected KEY=VALUE,VALUE...");
  GridAxis axis;
  std::string current;
  int depth = 0;  // brackets open: their commas belong to the value
  std::vector<std::string> values;
  for (char c : text.substr(equals + 1)) {
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      values.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  values.push_back(current);
  for (const std::string& value : values) {
    // Each value goes through the override parser, which checks the key and the YAML.
    auto parsed = config::ParseOverride(std::string(text.substr(0, equals)) + "=" + value);
    if (!parsed.ok()) return bad(std::string(parsed.status().message()));
    if (parsed->value.empty()) return bad("an empty value");
    axis.path = parsed->path;
    axis.values.push_back(parsed->value);
  }
  return axis;
}

std::vector<std::vector<config::Override>> GridTrials(std::span<const GridAxis> axes) {
  std::vector<std::vector<config::Override>> trials = {{}};
  for (const GridAxis& axis : axes) {
    std::vector<std::vector<config::Override>> next;
    for (const auto& trial : trials) {
      for (const std::string& value : axis.values) {
        next.push_back(trial);
        next.back().push_back({axis.path, value});
      }
    }
    trials = std::move(next);
  }
  return trials;
}

Result<TuneBudget> ParseTuneBudget(std::string_view text) {
  TuneBudget budget;
  const auto bad = [&] {
    return InvalidArgument("--budget '" + std::string(text) +
                           "': expected trials (12), a time (90s, 30m, 2h) or both (12,2h)");
  };
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view part = text.substr(start, comma - start);
    if (part.empty()) return bad();
    uint64_t number = 0;
    size_t i = 0;
    for (; i < part.size() && std::isdigit(static_cast<unsigned char>(part[i])); ++i) {
      number = number * 10 + (part[i] - '0');
      if (number > (uint64_t{1} << 31)) return bad();
    }
    if (i == 0 || number == 0) return bad();
    const std::string_view unit = part.substr(i);
    if (unit.empty()) {
      budget.trials = static_cast<uint32_t>(number);
    } else if (unit == "s" || unit == "m" || unit == "h") {
      const uint64_t scale = unit == "s" ? 1 : unit == "m" ? 60 : 3600;
      budget.time = std::chrono::seconds(number * scale);
    } else {
      return bad();
    }
    start = comma + 1;
  }
  return budget;
}

Result<trainer::ValidationPoint> ValidationOfSummary(std::string_view json, double epochs) {
  const nlohmann::json summary = nlohmann::json::parse(json, nullptr, false);
  if (!summary.is_object()) return DataLoss("the trial's summary is not a JSON object");
  const auto read = [](const nlohmann::json& node) -> std::optional<trainer::ValidationPoint> {
    if (!node.is_object() || !node["hit_rate"].is_number() || !node["ndcg"].is_number()) {
      return std::nullopt;
    }
    trainer::ValidationPoint point;
    point.hit_rate = node["hit_rate"].get<double>();
    point.ndcg = node["ndcg"].get<double>();
    if (node.contains("step") && node["step"].is_number()) point.step = node["step"];
    if (node.contains("epoch") && node["epoch"].is_number()) point.epoch = node["epoch"];
    return point;
  };
  if (summary.contains("early_stopping")) {
    if (auto best = read(summary["early_stopping"].value("best", nlohmann::json()))) return *best;
    return DataLoss("the trial's summary has early_stopping without a best evaluation");
  }
  const nlohmann::json eval = summary.value("eval", nlohmann::json());
  if (auto validation = read(eval.is_object() ? eval.value("validation", nlohmann::json())
                                              : nlohmann::json())) {
    validation->epoch = epochs;
    if (summary["steps"].is_number()) validation->step = summary["steps"];
    return *validation;
  }
  return DataLoss("the trial's summary has no validation figures");
}

std::optional<size_t> ChooseTrial(std::span<const TrialOutcome> trials) {
  std::optional<size_t> chosen;
  for (size_t i = 0; i < trials.size(); ++i) {
    if (!trials[i].status.ok() || !trials[i].validation) continue;
    if (!chosen || trainer::BetterValidation(*trials[i].validation, *trials[*chosen].validation)) {
      chosen = i;
    }
  }
  return chosen;
}

Result<std::string> ConfigWithOverrides(const std::string& path,
                                        std::span<const config::Override> overrides) {
  ASSIGN_OR_RETURN(YAML::Node root, config::LoadYamlFile(path));
  RETURN_IF_ERROR_CTX(config::ApplyOverrides(root, overrides), path);
  YAML::Emitter out;
  out << root;
  if (!out.good()) return Internal("cannot write the config as YAML: " + out.GetLastError());
  std::string header = "# " + path + " as chosen by ember tune";
  for (const config::Override& o : overrides) header += "\n#   " + o.ToString();
  return header + "\n" + out.c_str() + "\n";
}

}  // namespace ember::local
