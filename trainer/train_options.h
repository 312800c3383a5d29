// TrainOptions: the `train:` section of a config, how a trainer runs (steps, batch, backend...).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/sync_options.h"
#include "trainer/early_stopping.h"

namespace ember::trainer {

// The most batches train.lookahead may draw ahead (each is held in memory until its step).
inline constexpr uint32_t kMaxLookahead = 64;

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
  // Draw batches this many steps ahead and tell the servers their keys (hints), so that tiered
  // servers read those rows from disk before the batch pulls them; 0: off. Results are the same.
  uint32_t lookahead = 0;
  bool sampling_correction = true;  // logQ correction when the data knows item frequencies
  uint32_t eval_k = 10;          // HR@k / NDCG@k on interaction data
  uint32_t eval_batch_users = 256;
  // "sampled": each test item against its sampled negatives (HR@k, NDCG@k); "full": against
  // every item the user has no training interaction with (Recall@k, NDCG@k).
  std::string eval_protocol = "sampled";
  // false: the end-of-run evaluation leaves the test split alone (validation figures only), as
  // the trials of a search do, so that nothing they report can steer the choice.
  bool eval_test = true;
  // Evaluate on the validation split while training, keep the best, stop when it stops improving.
  EarlyStoppingOptions early_stopping;

  // Many trainers (see common/sync_options.h). sync.trainers comes from cluster.trainers.
  SyncOptions sync;
  // Where the dense tower weights live: "local" (each trainer its own, trained by its backend),
  // "servers" (one shared copy in the table `dense`, following sync.mode), or "auto": servers
  // when more than one trainer runs.
  std::string dense = "auto";
  uint32_t rank = 0;  // this trainer's share of the data, in [0, sync.trainers)

  bool dense_on_servers() const {
    return dense == "servers" || (dense == "auto" && sync.trainers > 1);
  }
};

Result<TrainOptions> TrainOptionsFromYaml(const YAML::Node& node, std::string_view path);

}  // namespace ember::trainer
