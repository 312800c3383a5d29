// TrainerCheckpoint: one trainer's part of a cluster checkpoint, the file
// DIR/trainer-<rank>.bin (layout of DIR in ps/checkpoint.h).
//
// It holds what the servers do not: how many steps the trainer completed, where its data source
// stands, and its dense towers. With the dense weights local to the trainer that is the whole
// DenseState (weights and Adam state), so a restored trainer takes exactly the step it would have
// taken; with the dense weights on the servers the servers' `dense` table carries them and their
// optimizer state, and the file keeps a copy of the weights only, for export.
//
// The file is a checksummed envelope (common/checksummed_file.h) of kind "EMBTRNR1".
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "trainer/dense_state.h"
#include "trainer/model_config.h"

namespace ember::trainer {

struct TrainerCheckpoint {
  uint64_t step = 0;          // steps the trainer had completed
  uint32_t rank = 0;          // its share of the data
  uint32_t trainers = 1;      // trainers of the run
  std::string data_position;  // DataSource::SavePosition
  // Weights always; moments and adam_steps only when `has_optimizer_state` (empty otherwise).
  DenseState dense;
  bool has_optimizer_state = false;
};

Status WriteTrainerCheckpoint(const std::string& path, const TrainerCheckpoint& checkpoint);
// DataLoss or NotFound naming the file when it is damaged or missing; InvalidArgument when its
// dense shapes do not fit `model`.
Result<TrainerCheckpoint> ReadTrainerCheckpoint(const std::string& path, const ModelConfig& model);
// The same without the model's shapes to check against (for tools).
Result<TrainerCheckpoint> ReadTrainerCheckpoint(const std::string& path);

// Export for serving: the dense towers of the checkpoint in `checkpoint_dir` (trainer 0's, which
// every trainer shares when the dense weights live on the servers) as
// OUT/dense/<user|item>.<layer>.weight.npy (float32 [out, in]) and .bias.npy (float32 [out]).
// NotFound when the checkpoint has no trainer file.
Status ExportDenseWeights(const std::string& checkpoint_dir, const std::string& out_dir);

}  // namespace ember::trainer
