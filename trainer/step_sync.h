// StepSync: a trainer's part in a synchronised run after each of its steps, for the C++ trainer
// and for Python trainers alike: the clock report to the scheduler, the bsp apply of the clock's
// pushes on the servers, and the checkpoint cuts the scheduler announces.
//
// After the pushes of step `clock` were acknowledged, EndStep(clock) reports it: in bsp and ssp
// the answer waits for the other trainers (common/sync_options.h); in bsp every trainer then asks
// every server to apply the clock (whichever asks first applies it). A grant may announce a cut
// for a later clock: once that step is done, each trainer writes its own file into the cut's
// folder (the data position, dense state: the caller's business) and TakeCut meets the others
// at the scheduler; the one it names coordinator writes the servers' part and the manifest.
//
// Thread-safety: one thread (the trainer's).
#pragma once

#include <cstdint>
#include <vector>

#include "common/clock_grant.h"
#include "common/status.h"
#include "common/sync_options.h"
#include "ps/client/client.h"

namespace ember::trainer {

// A checkpoint cut this trainer coordinated.
struct CutRecord {
  uint64_t step = 0;
  double seconds = 0;       // from this trainer's arrival until the manifest was written
  uint64_t bytes = 0;       // of the partition files written
  int64_t chain_place = -1; // -1: a full checkpoint; 0: the base of a chain; N: its Nth increment
};

class StepSync {
 public:
  // `sync`: the run's synchronisation (the trainer's config; a Python trainer's: client.sync());
  // `rank`: this trainer's, for its file and its logs.
  StepSync(ps::Client& client, SyncOptions sync, uint32_t rank);

  const SyncOptions& options() const { return sync_; }
  // The cut announced for a later clock, or for the step just ended (clock 0: none).
  const CutInfo& pending_cut() const { return pending_cut_; }
  // Whether the pending cut is taken after step `clock`.
  bool CutAfter(uint64_t clock) const { return pending_cut_.clock != 0 && pending_cut_.clock == clock; }

  // After step `clock`'s pushes were acknowledged: the clock report (noting an announced cut)
  // and, in bsp, its apply on every server.
  Status EndStep(uint64_t clock);
  // At the pending cut: `own_file` says whether this trainer's file is in the cut's folder. Meets
  // the others and, as coordinator, completes the cut. A failed cut is logged and training goes
  // on; only a broken connection to the scheduler is an error.
  Status TakeCut(const Status& own_file);
  // Whether the last cut taken was written whole (every trainer's file, the servers' part and
  // the manifest).
  bool last_cut_written() const { return last_cut_written_; }
  // The coordinator's part: the servers' partitions, every trainer file present, the manifest,
  // and pruning of older periodic checkpoints (also a checkpoint of a run of one trainer, taken
  // without the scheduler).
  Status CompleteCut(const CutInfo& cut, CutRecord* record);
  // The cuts this trainer coordinated since the last call.
  std::vector<CutRecord> TakeRecords();

 private:
  ps::Client& client_;
  const SyncOptions sync_;
  const uint32_t rank_;
  CutInfo pending_cut_;
  bool last_cut_written_ = false;
  std::vector<CutRecord> records_;
};

}  // namespace ember::trainer
