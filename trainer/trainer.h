// Trainer: the training loop of one trainer process.
//
// Per step: take a batch from the data source, deduplicate each slot's keys, pull the unique
// rows of all slots from the servers at once, run forward/backward and the dense Adam update on
// the backend, and push one summed gradient per unique row.
//
// By default the next batch is drawn and deduplicated while the pushes are in flight, and its
// pull waits for them to be acknowledged, so every step sees the rows its predecessor updated.
// With `train.pipeline` the rows of step t+1 are pulled while step t computes and step t-1's
// pushes are acknowledged meanwhile: more overlap, at the price of rows up to two steps stale.
//
// With many trainers (options.sync): in bsp the pushes are deferred, and after they are
// acknowledged the trainer reports its clock to the scheduler, waits for the grant, and asks the
// servers to apply the clock before it pulls the next step's rows; in ssp it reports and waits
// for the grant only (pushes apply on arrival); in asp it never waits. With
// options.dense_on_servers() the dense weights come from and go to the servers (DenseTable) in
// the same steps. A trainer that runs out of steps leaves the run.
//
// With options.lookahead = K the batches are drawn K steps ahead (LookaheadSource: the same
// batches in the same order, the same data positions), and each batch's keys are sent to the
// servers as a hint when it is drawn, so that a tiered server reads those rows from disk before
// the batch pulls them; the batch's push releases them. The rows a step sees are the same.
//
// Checkpoints: every trainer reports its clock to the scheduler after each step (in asp too,
// where the answer comes at once). A grant may announce a checkpoint cut at the next clock;
// the trainer then notes its data position before drawing the batch after the cut, and after
// the cut's step (pushes acknowledged, in bsp applied) writes DIR/trainer-<rank>.bin and meets
// the others at the scheduler; the last to arrive has the servers write their partitions and
// writes the manifest (ps/checkpoint.h). Restore reverses it.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock_grant.h"
#include "trainer/step_sync.h"
#include "ps/client/client.h"
#include "trainer/backend.h"
#include "trainer/data_source.h"
#include "trainer/lookahead_source.h"
#include "trainer/dense_table.h"
#include "trainer/model_config.h"
#include "trainer/train_options.h"

namespace ember::trainer {

// Mean figures over a window of steps.
struct WindowStats {
  uint32_t first_step = 0;  // 1-based, inclusive
  uint32_t last_step = 0;
  double loss = 0;
  double samples_per_second = 0;
  double pull_ms = 0;     // waiting for pulled rows, per step
  double compute_ms = 0;  // backend step, per step
  double push_ms = 0;     // waiting for push acknowledgements, per step
  double wait_ms = 0;     // waiting for the other trainers (clock grant, bsp apply), per step
  double unique_keys = 0; // rows pulled per step, all slots
  double device_busy = 0; // share of wall time the backend's device was busy (GPU busy share)
};

struct TrainSummary {
  uint32_t steps = 0;
  uint64_t samples = 0;
  double seconds = 0;
  double samples_per_second = 0;
  WindowStats first_window;  // loss at the start
  WindowStats last_window;   // loss at the end
  std::vector<WindowStats> windows;
  std::string backend;
  std::vector<CutRecord> cuts;  // the checkpoint cuts this trainer coordinated
};

// Hooks for tests, called on the trainer's thread.
struct ClockObserver {
  std::function<void(uint64_t clock)> step_done;    // step `clock` pushed and acknowledged
  std::function<void(uint64_t clock)> before_pull;  // about to pull the rows of step clock+1
};

class Trainer {
 public:
  // Checks that the tables exist, have the model's row width, and match the data's slot counts.
  static Result<std::unique_ptr<Trainer>> Create(ps::Client* client, Backend* backend,
                                                 DataSource* data, const ModelConfig& model,
                                                 TrainOptions options);

  // Called after step `step` (1-based) was pushed and acknowledged, before the next step's rows
  // are pulled; true ends the run after this step. It may evaluate, or WriteCheckpoint.
  using StepHook = std::function<Result<bool>(uint32_t step)>;

  // Runs until `steps` steps are completed (all of them, or those after a restored checkpoint's)
  // or `after_step` ends it; `on_window` sees each log window as it completes (also the partial
  // one an early end leaves).
  Result<TrainSummary> Run(uint32_t steps,
                           const std::function<void(const WindowStats&)>& on_window = {},
                           const StepHook& after_step = {});

  // In a run of one trainer: writes a complete checkpoint of the state after the last completed
  // step into `dir` (servers' partitions, this trainer's file, manifest), as a cut would but
  // without the scheduler. Before Run, or from the step hook.
  Status WriteCheckpoint(const std::string& dir);

  // Resumes from the checkpoint in `dir` before Run: the trainer of rank 0 has the servers load
  // their partitions (into any number of servers) while the others wait at a barrier; then every
  // trainer loads its own file: steps completed, data position and dense state. The checkpoint
  // must come from a run with as many trainers. Errors name the file or the mismatch.
  Status Restore(const std::string& dir);
  // Steps completed: before Run, non-zero after Restore; after Run, those it ended after.
  uint32_t completed_steps() const { return completed_steps_; }

  void set_clock_observer(ClockObserver observer) { observer_ = std::move(observer); }

 private:
  // The steps of one Run (trainer_run.cc).
  class StepLoop;

  Trainer(ps::Client* client, Backend* backend, DataSource* data, const ModelConfig& model,
          TrainOptions options);
  // At the cut after clock_: writes this trainer's file (with the data position noted before the
  // next batch was drawn) and takes the cut (StepSync::TakeCut).
  Status TakeCheckpoint(const Result<std::string>& data_position);
  // This trainer's file of a checkpoint in `dir`: step, data position and dense state.
  Status WriteOwnFile(const std::string& dir, const Result<std::string>& data_position);
  // With look-ahead: tells the servers the keys of the batch `id` just drawn ahead (a hint per
  // table), for its push to release.
  void AnnounceBatch(const Batch& batch, uint64_t id);
  // The dense weights as the next step would start from them (pulled when they live on the
  // servers).
  Result<DenseState> CurrentDenseState();

  ps::Client* client_;
  Backend* backend_;
  DataSource* data_;  // the caller's source, or lookahead_ drawing ahead from it
  std::unique_ptr<LookaheadSource> lookahead_;
  std::deque<ps::Ticket> hints_;  // hints sent, oldest first, until answered
  bool hint_failure_logged_ = false;
  ModelConfig model_;
  TrainOptions options_;
  uint64_t clock_ = 0;
  uint32_t completed_steps_ = 0;
  std::unique_ptr<DenseTable> dense_;  // when the dense weights live on the servers
  ClockObserver observer_;
  StepSync sync_;  // clock reports, bsp applies and cuts after each step
  // The data position after step noted_position_clock_, noted for a cut or the step hook.
  Result<std::string> noted_position_ = FailedPrecondition("no data position was noted");
  uint64_t noted_position_clock_ = 0;
  bool ran_ = false;  // Run has drawn batches: the source is past the last completed step
};

}  // namespace ember::trainer
