// ClusterConfig: one YAML file describing a whole job: the cluster's shape (`cluster:`), its
// tables (`tables:`), the model (`model:`), the data (`data:`) and the training run (`train:`).
// Every role reads the same file, with the same overrides of its keys (common/config_override.h;
// `ember cluster` passes its own on to every process it starts), and uses its part. Relative
// paths in `data:` resolve against `data_root`, or the config file's folder when that is empty.
// The loader copies cluster.trainers into train.sync.trainers and, when the dense weights live on
// the servers, adds their table (trainer::DenseTableSpec) to `tables`, so every role sees the
// same list.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "common/config_override.h"
#include "common/limits.h"
#include "common/status.h"
#include "common/table_spec.h"
#include "local/metrics_config.h"
#include "local/security_config.h"
#include "trainer/data_config.h"
#include "trainer/model_config.h"
#include "trainer/train_options.h"

namespace ember::local {

struct ClusterShape {
  std::string scheduler = "tcp://127.0.0.1:*";  // where the scheduler binds
  uint32_t servers = 2;
  std::string server_bind = "tcp://127.0.0.1:*";  // where each server binds its data socket
  // HOST[:PORT] a server advertises instead (common/advertised_endpoint.h); empty: its bind
  // address, or the host name for a wildcard one.
  std::string server_advertise;
  uint32_t server_threads = 0;  // worker threads per server; 0: ps::DefaultWorkerThreads()
  uint32_t partitions = 1024;
  uint32_t trainers = 1;  // trainer processes `ember cluster` starts; each reads its own share
  uint64_t server_memory_budget = 0;      // bytes of rows a server keeps in memory; 0: no limit
  std::string server_durability = "ack";  // ack | sync | flush, see `ember server --help`
  // Periodic checkpoints cut by the scheduler: every N steps into checkpoint_dir/step-<N>
  // (relative to where the scheduler runs), keeping the newest checkpoint_keep (0: all) and the
  // chains they need. `checkpoint_every: N`, or `{steps: N, incremental: true, base_every: B}`:
  // incremental cuts write only the rows changed since the cut before, and every Bth cut is a
  // full base (checkpoint_base_every 0: every cut is full).
  uint64_t checkpoint_every = 0;
  uint32_t checkpoint_base_every = 0;
  std::string checkpoint_dir;
  uint32_t checkpoint_keep = 3;
  // What a server does with a push holding a NaN or infinite gradient: refuse | skip.
  std::string non_finite_gradients = "refuse";
};

struct ClusterConfig {
  std::string path;
  ClusterShape cluster;
  Limits limits;  // `limits:`, what every process accepts from its peers (docs/limits.md)
  std::vector<TableSpec> tables;
  trainer::ModelConfig model;
  trainer::DataConfig data;
  trainer::TrainOptions train;
  // Whether the config has a `train:` section. One without can still run a cluster that serves
  // clients (the scheduler and servers), but not train: RequireTraining says so.
  bool has_train = false;
  SecurityConfig security;
  MetricsConfig metrics;  // `metrics:`, where each role serves Prometheus metrics (off by default)
};

// InvalidArgument naming the missing `train:` section when `config` has none.
Status RequireTraining(const ClusterConfig& config);

// Reads the file at `path`, applies `overrides` in order, then loads every section. Errors are
// InvalidArgument (NotFound for a missing file) naming the file and the field, or the override
// when the field's value came from one.
Result<ClusterConfig> LoadClusterConfig(const std::string& path, const std::string& data_root = "",
                                        std::span<const config::Override> overrides = {});

// Sets the number of trainers (a --trainers flag overrides cluster.trainers) and adds or removes
// the dense table accordingly.
void ApplyTrainerCount(ClusterConfig* config, uint32_t trainers);

}  // namespace ember::local
