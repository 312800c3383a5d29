// CheckpointCuts: the scheduler's bookkeeping of checkpoint cuts, the points where every trainer
// stops at the same clock while the cluster writes a consistent checkpoint.
//
// A cut at clock S is announced one step ahead, in the grant that answers a trainer's report of
// clock S-1, so the trainer can note its data position before it draws the batch after S. Cuts
// come from the periodic schedule (every N clocks, into DIR/step-<S>) or from a request
// (`ember checkpoint`), which is placed two clocks past the furthest trainer so that every
// trainer still has to report S-1. After completing S a trainer writes its file and arrives; once
// every participating trainer arrived, the last one to arrive coordinates: it has the servers
// write their partitions, writes the manifest and reports done, which releases the others.
// One cut at a time; a cut that cannot complete (a trainer left or died first, or it took longer
// than the timeout) fails, and everyone carries on training.
//
// Pure bookkeeping with time passed in; not thread-safe (the scheduler's one thread uses it).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/wire.h"

namespace ember::scheduler {

struct PeriodicCheckpoints {
  uint64_t every = 0;      // clocks between cuts; 0: none
  std::string dir;         // absolute; cut S goes to dir/step-<S, 9 digits>
  uint32_t keep = 3;       // newest step-* directories kept (older ones are removed, but for
                           // the chains of those kept); 0: all
  uint32_t chain = 0;      // incremental cuts: checkpoints a chain may hold (its base included)
                           // before the next cut is a new base; 0: every cut is full
};

// dir/step-000000123: periodic cut directories sort by step.
std::string PeriodicCutDir(const std::string& dir, uint64_t clock);

class CheckpointCuts {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  CheckpointCuts(PeriodicCheckpoints periodic, std::chrono::milliseconds timeout)
      : periodic_(std::move(periodic)), timeout_(timeout) {}

  // A cut into `dir` as soon as possible, given that the furthest trainer completed
  // `highest_clock`, as an increment of the checkpoint `after` (empty: a full checkpoint); returns
  // the cut's clock; with `chain` and no `after`, the cut starts a chain. FailedPrecondition
  // while another requested cut is pending or a cut is under way; InvalidArgument for a relative
  // or empty directory.
  Result<uint64_t> Request(const std::string& dir, const std::string& after, bool chain,
                           uint64_t highest_clock);
  // The cut to announce to a trainer that just completed `clock` (cut.clock == clock + 1), or
  // a CutInfo with clock 0.
  wire::CutInfo AnnouncedAfter(uint64_t clock) const;

  // `trainer` completed the cut at `clock` and wrote its file. InvalidArgument for a clock no
  // cut was announced at.
  Status Arrive(uint32_t trainer, uint64_t clock, TimePoint now);
  // The active cut, once every one of `participants` arrived and nobody coordinates it yet: the
  // caller hands it to a coordinator. Each cut is handed out once.
  std::optional<wire::CutInfo> ReadyToCoordinate(const std::vector<uint32_t>& participants);
  // DeadlineExceeded once the active cut waited longer than the timeout for arrivals, else OK.
  // (A trainer that leaves or dies before arriving stops being a participant; the coordinator
  // then finds its file missing and fails the cut, naming it.)
  Status CheckProgress(TimePoint now) const;
  // Ends the active cut; returns it (clock 0 if there was none). `requested` says whether it was
  // the one asked for with Request (whose requester waits for the outcome).
  wire::CutInfo Finish(bool* requested);

  bool active() const { return active_.has_value(); }
  uint64_t active_clock() const { return active_ ? active_->cut.clock : 0; }
  // The active cut as its coordinator was told it (clock 0: none).
  wire::CutInfo active_cut() const;
  bool coordinating() const { return active_ && active_->coordinating; }
  // The requested cut not yet reached (clock 0: none).
  uint64_t requested_clock() const { return requested_ ? requested_->clock : 0; }
  // Drops the requested cut that was not reached (the run ended first).
  void CancelRequest() { requested_.reset(); }
  // The cut `ember checkpoint` asked for, pending or under way (clock 0: none).
  wire::CutInfo requested_cut() const;

  // What a restarted scheduler needs (scheduler/scheduler_state.h): the requested cut and the
  // active one, with who arrived at it and whether a coordinator has it.
  struct Saved {
    std::optional<wire::CutInfo> requested;
    std::optional<wire::CutInfo> active;
    bool active_requested = false;
    bool coordinating = false;
    std::vector<uint32_t> arrived;
  };
  Saved Save() const;
  // Replaces both cuts with `saved`'s; an active one counts as started at `now`.
  void Restore(const Saved& saved, TimePoint now);

 private:
  struct Active {
    wire::CutInfo cut;
    bool requested = false;
    std::set<uint32_t> arrived;
    bool coordinating = false;
    TimePoint started;
  };

  const PeriodicCheckpoints periodic_;
  const std::chrono::milliseconds timeout_;
  std::optional<wire::CutInfo> requested_;
  std::optional<Active> active_;
};

}  // namespace ember::scheduler
