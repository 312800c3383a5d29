// DataConfig: the `data:` section of a config: which DataSource feeds the trainer, and its options.
//
//   data:
//     kind: interactions            # or synthetic (the default)
//     interactions:
//       path: ../data/ml-100k/u.data  # relative paths resolve against the config's folder
//       delimiter: "\t"
//       header: false
//       user: 0                     # 0-based column, or a header name
//       item: 1
//       rating: 2                   # null or -1: every row is a positive
//       timestamp: 3                # null or -1: later lines are later interactions
//       min_rating: 0
//       negatives: 99
//       seed: 42
//       max_eval_users: 0
//       user_features: {path: ../data/ml-100k/u.user, delimiter: "|", id: 0, features: [3, 1]}
//       item_features: {path: ../data/ml-100k/u.item, delimiter: "|", id: 0,
//                       features: [[5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
//                                   21, 22, 23]]}
//     synthetic: {user_slots: 3, item_slots: 3, vocabulary: 10000000, exponent: 1.05, seed: 7,
//                 num_clusters: 64, signal: 0.9}
//
// A side-feature entry in `features` is one column or a list of columns whose values together
// form one key (the 19 MovieLens genre flags above become one genre-combination feature).
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "trainer/data_source.h"
#include "trainer/interaction_dataset.h"
#include "trainer/synthetic_source.h"

namespace ember::trainer {

struct DataConfig {
  std::string kind = "synthetic";  // synthetic | interactions
  SyntheticOptions synthetic;
  InteractionOptions interactions;
};

// Reads the node under `data:`; `path` names it in errors ("data"). Relative file paths are
// resolved against `config_dir` (the folder of the config file; empty: leave them as written).
// Unknown keys are rejected by name.
Result<DataConfig> DataConfigFromYaml(const YAML::Node& node, std::string_view path,
                                      const std::string& config_dir);

Result<std::shared_ptr<InteractionDataset>> LoadInteractions(const InteractionOptions& options);

// A SyntheticSource, or an InteractionSource over LoadInteractions(config.interactions).
Result<std::unique_ptr<DataSource>> MakeDataSource(const DataConfig& config);

}  // namespace ember::trainer
