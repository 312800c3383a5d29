// ClusterConfig loader.
#include "local/cluster_config.h"

#include <algorithm>
#include <filesystem>

#include "common/advertised_endpoint.h"
#include "common/yaml_util.h"
#include "embedding/table_config.h"
#include "ps/server/durability.h"
#include "ps/server/non_finite_gradients.h"
#include "trainer/dense_table.h"

namespace ember::local {
namespace {

// cluster.checkpoint_every: a step count, or {steps, incremental, base_every}.
Status ReadCheckpointEvery(const YAML::Node& node, ClusterShape* shape) {
  if (!node.IsDefined() || node.IsNull()) return Status::Ok();
  const char* path = "cluster.checkpoint_every";
  if (!node.IsMap()) {
    try {
      shape->checkpoint_every = node.as<uint64_t>();
      return Status::Ok();
    } catch (const YAML::Exception&) {
      return InvalidArgument(std::string(path) + ": cannot read '" +
                             (node.IsScalar() ? node.Scalar() : std::string("<non-scalar>")) +
                             "' (a step count, or {steps: N, incremental: true, base_every: B})");
    }
  }
  RETURN_IF_ERROR(config::RejectUnknownKeys(node, path, {"steps", "incremental", "base_every"}));
  RETURN_IF_ERROR(config::ReadRequired(node, path, "steps", &shape->checkpoint_every));
  bool incremental = false;
  RETURN_IF_ERROR(config::ReadOptional(node, path, "incremental", &incremental));
  uint32_t base_every = 10;
  RETURN_IF_ERROR(config::ReadOptional(node, path, "base_every", &base_every));
  if (!incremental && node["base_every"].IsDefined()) {
    return InvalidArgument(std::string(path) + ".base_every: needs incremental: true");
  }
  if (incremental && base_every == 0) {
    return InvalidArgument(std::string(path) + ".base_every: must be >= 1 (1: every cut is a base)");
  }
  shape->checkpoint_base_every = incremental ? base_every : 0;
  return Status::Ok();
}

Status ReadShape(const YAML::Node& node, ClusterShape* shape) {
  if (!node.IsDefined() || node.IsNull()) return Status::Ok();
  RETURN_IF_ERROR(config::RejectUnknownKeys(
      node, "cluster",
      {"scheduler", "servers", "server_bind", "server_advertise", "server_threads", "partitions",
       "trainers", "server_memory_budget", "server_durability", "checkpoint_every",
       "checkpoint_dir", "checkpoint_keep", "non_finite_gradients"}));
  RETURN_IF_ERROR(config::ReadOptional(node, "cluster", "trainers", &shape->trainers));
  if (shape->trainers == 0) return InvalidArgument("cluster.trainers: must be >= 1");
  RETURN_IF_ERROR(config::ReadOptional(node, "cluster", "scheduler", &shape->scheduler));
  RETURN_IF_ERROR(config::ReadOptional(node, "cluster", "servers", &shape->servers));
  RETURN_IF_ERROR(config::ReadOptional(node, "cluster", "server_bind", &shape->server_bind));
  RETURN_IF_ERROR(
      config::ReadOptional(node, "cluster", "server_advertise", &shape->server_advertise));
  if (!shape->server_advertise.empty()) {
    // Checked here, so that a bad value is named before any server starts.
    RETURN_IF_ERROR_CTX(AdvertisedEndpoint("tcp://0.0.0.0:1", shape->server_advertise).status(),
                        "cluster.server_advertise");
  }
  RETURN_IF_ERROR(config::ReadOptional(node, "cluster", "server_threads", &shape->server_threads));
  RETURN_IF_ERROR(config::ReadOptional(node, "cluster", "partitions", &shape->partitions));
  RETURN_IF_ERROR(
      config::ReadOptional(node, "cluster", "server_memory_budget", &shape->server_memory_budget));
  RETURN_IF_ERROR(
      config::ReadOptional(node, "cluster", "server_durability", &shape->server_durability));
  if (auto durability = ps::ParseDurability(shape->server_durability); !durability.ok()) {
    return durability.status().WithContext("cluster.server_durability");
  }
  RETURN_IF_ERROR(config::ReadOptional(node, "cluster", "non_finite_gradients",
                                       &shape->non_finite_gradients));
  if (auto policy = ps::ParseNonFinitePolicy(shape->non_finite_gradients); !policy.ok()) {
    return policy.status().WithContext("cluster.non_finite_gradients");
  }
  RETURN_IF_ERROR(ReadCheckpointEvery(node["checkpoint_every"], shape));
  RETURN_IF_ERROR(config::ReadOptional(node, "cluster", "checkpoint_dir", &shape->checkpoint_dir));
  RETURN_IF_ERROR(
      config::ReadOptional(node, "cluster", "checkpoint_keep", &shape->checkpoint_keep));
  if (shape->checkpoint_every > 0 && shape->checkpoint_dir.empty()) {
    return InvalidArgument("cluster.checkpoint_every needs cluster.checkpoint_dir");
  }
  if (shape->servers == 0) return InvalidArgument("cluster.servers: must be >= 1");
  if (shape->partitions < shape->servers) {
    return InvalidArgument("cluster.partitions: must be at least cluster.servers");
  }
  return Status::Ok();
}

}  // namespace

void ApplyTrainerCount(ClusterConfig* config, uint32_t trainers) {
  config->cluster.trainers = trainers;
  config->train.sync.trainers = trainers;
  auto& tables = config->tables;
  tables.erase(
      std::remove_if(tables.begin(), tables.end(),
                     [](const TableSpec& t) { return t.name == trainer::kDenseTableName; }),
      tables.end());
  if (config->train.dense_on_servers()) tables.push_back(trainer::DenseTableSpec(config->model));
}

namespace {

// Early stopping chooses on the validation split of interaction data, in a run of one trainer.
Status CheckEarlyStopping(const ClusterConfig& config) {
  if (!config.train.early_stopping.enabled()) return Status::Ok();
  if (config.data.kind != "interactions" || !config.data.interactions.validation) {
    return InvalidArgument("train.early_stopping: needs data.interactions.validation: true (it "
                           "chooses on the validation split, never on the test split)");
  }
  if (config.cluster.trainers != 1) {
    return InvalidArgument("train.early_stopping: needs a run of one trainer (cluster.trainers "
                           "is " + std::to_string(config.cluster.trainers) + ")");
  }
  return Status::Ok();
}

Result<ClusterConfig> ParseClusterConfig(const std::string& path, const std::string& data_root,
                                         std::span<const config::Override> overrides) {
  ASSIGN_OR_RETURN(YAML::Node root, config::LoadYamlFile(path));
  RETURN_IF_ERROR_CTX(config::ApplyOverrides(root, overrides), path);
  auto fail = [&](const Status& status) {
    return config::BlameOverride(status, overrides).WithContext(path);
  };
  ClusterConfig config;
  config.path = path;
  Status known = config::RejectUnknownKeys(
      root, "config",
      {"cluster", "limits", "tables", "model", "data", "train", "security", "metrics"});
  if (!known.ok()) return fail(known);
  if (Status s = ReadShape(root["cluster"], &config.cluster); !s.ok()) return fail(s);
  auto limits = LimitsFromYaml(root["limits"], "limits");
  if (!limits.ok()) return fail(limits.status());
  config.limits = *limits;
  auto tables = embedding::TableSpecsFromYaml(root["tables"], "tables");
  if (!tables.ok()) return fail(tables.status());
  config.tables = std::move(*tables);
  for (const TableSpec& table : config.tables) {
    if (table.name == trainer::kDenseTableName) {
      return fail(InvalidArgument(std::string("tables: the name '") + trainer::kDenseTableName +
                                  "' is reserved for the dense weights"));
    }
  }
  if (root["model"].IsDefined()) {
    auto model = trainer::ModelConfigFromYaml(root["model"], "model");
    if (!model.ok()) return fail(model.status());
    config.model = *model;
  }
  std::string dir =
      data_root.empty() ? std::filesystem::path(path).parent_path().string() : data_root;
  if (dir.empty()) dir = ".";
  if (root["data"].IsDefined()) {
    auto data = trainer::DataConfigFromYaml(root["data"], "data", dir);
    if (!data.ok()) return fail(data.status());
    config.data = std::move(*data);
  }
  const std::string config_dir = std::filesystem::path(path).parent_path().string();
  auto security = SecurityConfigFromYaml(root["security"], config_dir.empty() ? "." : config_dir);
  if (!security.ok()) return fail(security.status());
  config.security = std::move(*security);
  auto metrics = MetricsConfigFromYaml(root["metrics"], "metrics");
  if (!metrics.ok()) return fail(metrics.status());
  config.metrics = std::move(*metrics);
  config.has_train = root["train"].IsDefined();
  if (config.has_train) {
    auto train = trainer::TrainOptionsFromYaml(root["train"], "train");
    if (!train.ok()) return fail(train.status());
    config.train = std::move(*train);
    if (Status s = CheckEarlyStopping(config); !s.ok()) return fail(s);
  }
  if (config.model.negatives > 0 && config.data.kind != "interactions") {
    return fail(InvalidArgument("model.loss " + std::string(trainer::LossName(config.model.loss)) +
                                " draws its negatives from the catalogue of interaction data; "
                                "data.kind is '" + config.data.kind + "'"));
  }
  ApplyTrainerCount(&config, config.cluster.trainers);
  return config;
}

}  // namespace

Status RequireTraining(const ClusterConfig& config) {
  if (config.has_train) return Status::Ok();
  return InvalidArgument(config.path + ": train: missing (a config without it can only serve "
                         "clients: ember cluster --serve)");
}

Result<ClusterConfig> LoadClusterConfig(const std::string& path, const std::string& data_root,
                                        std::span<const config::Override> overrides) {
  return config::CatchYamlErrors(path,
                                 [&] { return ParseClusterConfig(path, data_root, overrides); });
}

}  // namespace ember::local
