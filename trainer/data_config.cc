// DataConfig: YAML loading and data source construction.
#include "trainer/data_config.h"

#include <filesystem>

#include "common/yaml_util.h"
#include "trainer/interaction_source.h"

namespace ember::trainer {
namespace {

std::string Join(std::string_view path, std::string_view key) {
  return std::string(path) + "." + std::string(key);
}

std::string ResolvePath(const std::string& file, const std::string& config_dir) {
  if (file.empty() || config_dir.empty() || std::filesystem::path(file).is_absolute()) return file;
  return (std::filesystem::path(config_dir) / file).lexically_normal().string();
}

// A column from a scalar: an integer is a 0-based position (-1: unset, when allowed), anything
// else a header name; null is unset when allowed.
Status ParseColumn(const YAML::Node& value, const std::string& where, bool may_be_unset,
                   ColumnRef* out) {
  if (!value.IsDefined() || value.IsNull()) {
    if (!may_be_unset) return InvalidArgument(where + ": a column is required");
    *out = ColumnRef{};
    return Status::Ok();
  }
  if (!value.IsScalar()) {
    return InvalidArgument(where + ": expected a column number or header name (line " +
                           std::to_string(value.Mark().line + 1) + ")");
  }
  int index = 0;
  if (YAML::convert<int>::decode(value, index)) {
    if (index >= 0) {
      *out = ColumnRef(index);
      return Status::Ok();
    }
    if (index == -1 && may_be_unset) {
      *out = ColumnRef{};
      return Status::Ok();
    }
    return InvalidArgument(where + ": column " + std::to_string(index) + " is negative");
  }
  if (value.Scalar().empty()) return InvalidArgument(where + ": empty column name");
  *out = ColumnRef(value.Scalar());
  return Status::Ok();
}

Status ReadColumn(const YAML::Node& node, std::string_view path, const char* key,
                  bool may_be_unset, ColumnRef* out) {
  const YAML::Node value = node[key];
  if (!value.IsDefined()) return Status::Ok();  // keep the default
  return ParseColumn(value, Join(path, key), may_be_unset, out);
}

Status ReadFormat(const YAML::Node& node, std::string_view path, DelimitedOptions* format) {
  RETURN_IF_ERROR(config::ReadOptional(node, path, "delimiter", &format->delimiter));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "header", &format->header));
  if (format->delimiter.empty()) return InvalidArgument(Join(path, "delimiter") + ": is empty");
  std::string quote(1, format->quote);
  RETURN_IF_ERROR(config::ReadOptional(node, path, "quote", &quote));
  if (quote.size() > 1) {
    return InvalidArgument(Join(path, "quote") + ": '" + quote +
                           "' is not one character (\"\" turns quoting off)");
  }
  format->quote = quote.empty() ? '\0' : quote[0];
  if (format->quote != '\0' && format->delimiter.find(format->quote) != std::string::npos) {
    return InvalidArgument(Join(path, "quote") + ": the quote character is part of the delimiter");
  }
  RETURN_IF_ERROR(config::ReadOptional(node, path, "comment", &format->comment));
  return Status::Ok();
}

// A feature is a column, a list of columns (one key for their combined values), or
// {column: C, separator: S} (a multi-valued column: a key per value).
Status ReadFeatures(const YAML::Node& node, std::string_view path,
                    std::vector<SideFeature>* features) {
  const YAML::Node list = node["features"];
  if (!list.IsDefined() || list.IsNull()) return Status::Ok();
  const std::string where = Join(path, "features");
  if (!list.IsSequence()) return InvalidArgument(where + ": expected a list of features");
  features->clear();
  for (size_t f = 0; f < list.size(); ++f) {
    const YAML::Node entry = list[f];
    const std::string entry_where = where + "[" + std::to_string(f) + "]";
    SideFeature feature;
    std::vector<ColumnRef>& columns = feature.columns;
    if (entry.IsMap()) {
      RETURN_IF_ERROR(config::RejectUnknownKeys(entry, entry_where, {"column", "separator"}));
      ColumnRef column;
      if (!entry["column"].IsDefined()) return InvalidArgument(entry_where + ".column: missing");
      RETURN_IF_ERROR(ParseColumn(entry["column"], entry_where + ".column", false, &column));
      columns.push_back(std::move(column));
      RETURN_IF_ERROR(config::ReadRequired(entry, entry_where, "separator", &feature.separator));
      if (feature.separator.empty()) {
        return InvalidArgument(entry_where + ".separator: must not be empty");
      }
    } else if (entry.IsSequence()) {
      if (entry.size() == 0) return InvalidArgument(entry_where + ": lists no columns");
      for (size_t c = 0; c < entry.size(); ++c) {
        ColumnRef column;
        RETURN_IF_ERROR(ParseColumn(entry[c], entry_where + "[" + std::to_string(c) + "]",
                                    false, &column));
        columns.push_back(std::move(column));
      }
    } else {
      ColumnRef column;
      RETURN_IF_ERROR(ParseColumn(entry, entry_where, false, &column));
      columns.push_back(std::move(column));
    }
    features->push_back(std::move(feature));
  }
  return Status::Ok();
}

Result<SideFeatureFile> SideFeaturesFromYaml(const YAML::Node& node, std::string_view path,
                                             const std::string& config_dir) {
  RETURN_IF_ERROR(
      config::RejectUnknownKeys(node, path, {"path", "delimiter", "header", "quote", "comment", "id", "features"}));
  SideFeatureFile side;
  RETURN_IF_ERROR(config::ReadRequired(node, path, "path", &side.path));
  side.path = ResolvePath(side.path, config_dir);
  RETURN_IF_ERROR(ReadFormat(node, path, &side.format));
  RETURN_IF_ERROR(ReadColumn(node, path, "id", false, &side.id));
  RETURN_IF_ERROR(ReadFeatures(node, path, &side.features));
  return side;
}

Result<InteractionOptions> InteractionsFromYaml(const YAML::Node& node, std::string_view path,
                                                const std::string& config_dir) {
  RETURN_IF_ERROR(config::RejectUnknownKeys(
      node, path,
      {"path", "delimiter", "header", "quote", "comment", "user", "item", "rating", "timestamp",
       "min_rating", "negatives", "seed", "max_eval_users", "validation", "user_history",
       "causal_history",
       "user_features", "item_features"}));
  InteractionOptions options;
  RETURN_IF_ERROR(config::ReadRequired(node, path, "path", &options.path));
  options.path = ResolvePath(options.path, config_dir);
  RETURN_IF_ERROR(ReadFormat(node, path, &options.format));
  RETURN_IF_ERROR(ReadColumn(node, path, "user", false, &options.user));
  RETURN_IF_ERROR(ReadColumn(node, path, "item", false, &options.item));
  RETURN_IF_ERROR(ReadColumn(node, path, "rating", true, &options.rating));
  RETURN_IF_ERROR(ReadColumn(node, path, "timestamp", true, &options.timestamp));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "min_rating", &options.min_rating));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "negatives", &options.negatives));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "seed", &options.seed));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "max_eval_users", &options.max_eval_users));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "validation", &options.validation));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "user_history", &options.user_history));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "causal_history", &options.causal_history));
  if (options.causal_history && options.user_history == 0) {
    return InvalidArgument(Join(path, "causal_history") +
                           ": needs a history (set data.interactions.user_history)");
  }
  for (const char* key : {"user_features", "item_features"}) {
    const YAML::Node side = node[key];
    if (!side.IsDefined() || side.IsNull()) continue;
    ASSIGN_OR_RETURN(SideFeatureFile file, SideFeaturesFromYaml(side, Join(path, key), config_dir));
    (std::string_view(key) == "user_features" ? options.user_features : options.item_features) =
        std::move(file);
  }
  return options;
}

Result<SyntheticOptions> SyntheticFromYaml(const YAML::Node& node, std::string_view path) {
  RETURN_IF_ERROR(config::RejectUnknownKeys(node, path,
                                            {"user_slots", "item_slots", "vocabulary", "exponent",
                                             "seed", "num_clusters", "signal"}));
  SyntheticOptions options;
  RETURN_IF_ERROR(config::ReadOptional(node, path, "user_slots", &options.user_slots));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "item_slots", &options.item_slots));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "vocabulary", &options.vocabulary));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "exponent", &options.exponent));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "seed", &options.seed));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "num_clusters", &options.num_clusters));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "signal", &options.signal));
  RETURN_IF_ERROR(ValidateSyntheticOptions(options, path));
  return options;
}

}  // namespace

Result<DataConfig> DataConfigFromYaml(const YAML::Node& node, std::string_view path,
                                      const std::string& config_dir) {
  DataConfig config;
  if (!node.IsDefined() || node.IsNull()) return config;
  RETURN_IF_ERROR(config::RejectUnknownKeys(node, path, {"kind", "synthetic", "interactions"}));
  RETURN_IF_ERROR(config::ReadOptional(node, path, "kind", &config.kind));
  if (config.kind != "synthetic" && config.kind != "interactions") {
    return InvalidArgument(Join(path, "kind") + ": '" + config.kind +
                           "' is not a data kind (known: synthetic, interactions)");
  }
  const YAML::Node synthetic = node["synthetic"];
  if (synthetic.IsDefined() && !synthetic.IsNull()) {
    ASSIGN_OR_RETURN(config.synthetic, SyntheticFromYaml(synthetic, Join(path, "synthetic")));
  }
  const YAML::Node interactions = node["interactions"];
  if (interactions.IsDefined() && !interactions.IsNull()) {
    ASSIGN_OR_RETURN(config.interactions,
                     InteractionsFromYaml(interactions, Join(path, "interactions"), config_dir));
  } else if (config.kind == "interactions") {
    return InvalidArgument(Join(path, "interactions") +
                           ": required when kind is 'interactions' (it names the file)");
  }
  return config;
}

Result<std::shared_ptr<InteractionDataset>> LoadInteractions(const InteractionOptions& options) {
  return InteractionDataset::Load(options);
}

Result<std::unique_ptr<DataSource>> MakeDataSource(const DataConfig& config) {
  if (config.kind == "interactions") {
    ASSIGN_OR_RETURN(std::shared_ptr<InteractionDataset> dataset,
                     LoadInteractions(config.interactions));
    return std::unique_ptr<DataSource>(
        std::make_unique<InteractionSource>(std::move(dataset), config.interactions.seed));
  }
  if (config.kind == "synthetic") {
    RETURN_IF_ERROR(ValidateSyntheticOptions(config.synthetic, "data.synthetic"));
    return std::unique_ptr<DataSource>(std::make_unique<SyntheticSource>(config.synthetic));
  }
  return InvalidArgument("data.kind: '" + config.kind + "' is not a data kind");
}

}  // namespace ember::trainer
