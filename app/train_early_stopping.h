// `ember train` with train.early_stopping: trains on the training split less each user's
// validation item, evaluates on validation at the scheduled steps, stops when patience runs out,
// and then restores the best state, retrains on the whole training split for the chosen number of
// epochs, or keeps the last state (trainer/early_stopping.h has the rules).
//
// The best state is a complete checkpoint (Trainer::WriteCheckpoint), written whenever an
// evaluation improves; restoring it, and resetting the rows before a retrain, replace the
// servers' rows, which takes an admin key under CurveZMQ.
#pragma once

#include <functional>
#include <memory>

#include "local/cluster_config.h"
#include "local/train_summary.h"
#include "ps/client/client.h"
#include "trainer/backend.h"
#include "trainer/interaction_dataset.h"
#include "trainer/trainer.h"

namespace ember::app {

struct EarlyStoppingRun {
  const local::ClusterConfig* config = nullptr;
  const ps::ClientOptions* client_options = nullptr;  // to connect again for a retrain
  ps::Client* client = nullptr;
  trainer::Backend* backend = nullptr;
  trainer::Trainer* loop = nullptr;  // created on `dataset`, not yet run
  std::shared_ptr<trainer::InteractionDataset> dataset;  // with validation cases
  uint32_t steps = 0;  // the most steps (train.epochs or train.steps)
  std::function<void(const trainer::WindowStats&, uint32_t steps)> on_window;
};

// The model the run ends with. After a retrain it lives in the new client and backend, trained on
// `dataset` (the same data without a validation split); otherwise these are empty and the run's
// own client, backend and dataset hold it.
struct EarlyStoppedModel {
  trainer::TrainSummary summary;  // of the training that made the final model
  local::EarlyStoppingReport report;
  std::unique_ptr<ps::Client> client;
  std::unique_ptr<trainer::Backend> backend;
  std::shared_ptr<trainer::InteractionDataset> dataset;
};

Result<EarlyStoppedModel> TrainWithEarlyStopping(const EarlyStoppingRun& run);

}  // namespace ember::app
