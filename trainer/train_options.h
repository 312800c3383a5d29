// TrainOptions: the `train:` section of a config, how a trainer runs (steps, batch, backend...).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ember::trainer {

struct TrainOptions {
  uint32_t steps = 200;          // optimisation steps; with `epochs` > 0, epochs decide instead
  uint32_t epochs = 0;           // passes over an interaction file's training set
  uint32_t batch_size = 4096;
  std::string backend = "auto";  // cpu | cuda | auto
  uint32_t log_every = 20;       // progress line every N steps (0: none)
  std::vector<std::string> user_tables;  // table per user-tower slot, in slot order
  std::vector<std::string> item_tables;  // table per item-tower slot
  bool wire_fp16 = false;  // rows and gradients travel as fp16 (servers keep fp32)
  bool pipeline = false;  // pull step t+1's rows while step t computes (rows up to 2 steps stale)
  bool sampling_correction = true;  // logQ correction when the data knows item frequencies
  uint32_t eval_k = 10;          // HR@k / NDCG@k on interaction data
  uint32_t eval_batch_users = 256;
};

Result<TrainOptions> TrainOptionsFromYaml(const YAML::Node& node, std::string_view path);

}  // namespace ember::trainer
