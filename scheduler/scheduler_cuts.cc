// Scheduler: checkpoint cuts (the protocol is in checkpoint_cuts.h): requests for one, the
// trainers' arrivals, the coordinator's report, and answering arrivals and finishes sent again
// after a restart.
#include <spdlog/spdlog.h>

#include "common/quote_for_error.h"
#include "scheduler/scheduler.h"

namespace ember::scheduler {

void Scheduler::HandleCheckpointNow(Frame identity, uint64_t request_id,
                                    const wire::CheckpointNowRequest& now) {
  const std::string& dir = now.dir;
  if (clocks_.live_trainers().empty()) {
    Reply(identity, wire::EncodeStatusResponse(
                        request_id, routing_.epoch,
                        FailedPrecondition("no trainer is training (none has completed a step "
                                           "yet, or all have finished)")));
    return;
  }
  if (clocks_.any_stale()) {
    // The cut's clock would come from clocks the restart may have set back.
    Reply(identity, wire::EncodeStatusResponse(
                        request_id, routing_.epoch,
                        Unavailable("checkpoint into " + QuoteForError(dir) + ": the scheduler "
                                    "restarted and waits for the trainers' clocks; ask again")));
    return;
  }
  if (!AdmitWaiter(identity, request_id, "checkpoint into " + QuoteForError(dir))) return;
  const wire::CutInfo pending = cuts_.requested_cut();
  if (pending.clock != 0 && pending.dir == dir && pending.after == now.after) {
    // Asked again (the scheduler restarted since): wait for the same cut.
    checkpoint_waiters_.push_back(Waiter{std::move(identity), request_id, 0, pending.clock});
    return;
  }
  auto clock = cuts_.Request(dir, now.after, now.chain, clocks_.highest_clock());
  if (!clock.ok()) {
    Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch, clock.status()));
    return;
  }
  spdlog::info("scheduler: checkpoint into {} requested; the trainers meet after clock {}", dir,
               *clock);
  checkpoint_waiters_.push_back(Waiter{std::move(identity), request_id, 0, *clock});
  ServeCut();
}

void Scheduler::HandleCheckpointCut(Frame identity, uint64_t request_id,
                                    const wire::CheckpointCutRequest& cut) {
  const auto now = std::chrono::steady_clock::now();
  const bool coordinator = cuts_.coordinating() && cut.clock == cuts_.active_clock() &&
                           cut.trainer == cut_coordinator_;
  if (!coordinator && AnswerEndedCut(identity, request_id, cut)) return;
  if (cut.done) {
    if (!coordinator) {
      Reply(identity, wire::EncodeStatusResponse(
                          request_id, routing_.epoch,
                          FailedPrecondition("trainer " + std::to_string(cut.trainer) +
                                             " does not coordinate a cut at clock " +
                                             std::to_string(cut.clock))));
      return;
    }
    FinishCut(cut.error.empty() ? Status::Ok() : Aborted("checkpoint cut failed: " + cut.error));
    Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch, Status::Ok()));
    return;
  }
  if (coordinator) {  // its arrival sent again: its answer was lost
    Reply(identity, wire::EncodeCutInfoResponse(request_id, routing_.epoch, cuts_.active_cut()));
    return;
  }
  if (!AdmitWaiter(identity, request_id, "checkpoint cut of trainer " +
                                            std::to_string(cut.trainer))) {
    return;
  }
  Status alive = clocks_.Heartbeat(cut.trainer, now);
  if (alive.ok()) alive = cuts_.Arrive(cut.trainer, cut.clock, now);
  if (!alive.ok()) {
    Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch, alive));
    return;
  }
  std::erase_if(cut_waiters_, [&](const Waiter& waiter) { return waiter.member_id == cut.trainer; });
  cut_waiters_.push_back(Waiter{std::move(identity), request_id, cut.trainer, cut.clock});
  ServeCut();
}

void Scheduler::ServeCut() {
  const auto now = std::chrono::steady_clock::now();
  if (cuts_.requested_clock() != 0 && clocks_.live_trainers().empty() &&
      clocks_.highest_clock() > 0) {
    // Every trainer that was at work left or died: nobody will reach the requested cut.
    const Status gone = FailedPrecondition("no trainer is left to reach the checkpoint cut");
    for (Waiter& waiter : checkpoint_waiters_) {
      Reply(waiter.identity, wire::EncodeStatusResponse(waiter.request_id, routing_.epoch, gone));
    }
    checkpoint_waiters_.clear();
    cuts_.CancelRequest();
  }
  if (!cuts_.active() || cuts_.coordinating()) return;
  if (Status progress = cuts_.CheckProgress(now); !progress.ok()) {
    FinishCut(progress);
    return;
  }
  if (cut_waiters_.empty()) return;
  auto ready = cuts_.ReadyToCoordinate(clocks_.live_trainers());
  if (!ready) return;
  // The last arrival coordinates; it is the newest waiter.
  Waiter& coordinator = cut_waiters_.back();
  cut_coordinator_ = coordinator.member_id;
  spdlog::info("scheduler: every trainer is at the checkpoint cut after clock {}; trainer {} "
               "writes {}", ready->clock, cut_coordinator_, ready->dir);
  Reply(coordinator.identity,
        wire::EncodeCutInfoResponse(coordinator.request_id, routing_.epoch, *ready));
  cut_waiters_.pop_back();
}

void Scheduler::FinishCut(const Status& outcome) {
  bool requested = false;
  wire::CutInfo cut = cuts_.Finish(&requested);
  ++(outcome.ok() ? cuts_completed_ : cuts_failed_);
  last_cut_clock_ = cut.clock;
  last_cut_outcome_ = outcome;
  if (outcome.ok()) {
    spdlog::info("scheduler: checkpoint after clock {} complete in {}", cut.clock, cut.dir);
  } else {
    spdlog::error("scheduler: checkpoint after clock {} into {} failed: {}", cut.clock, cut.dir,
                  outcome.ToString());
  }
  auto answer = [&](std::vector<Waiter>& waiters) {
    for (Waiter& waiter : waiters) {
      Reply(waiter.identity,
            outcome.ok()
                ? wire::EncodeCutInfoResponse(waiter.request_id, routing_.epoch, cut)
                : wire::EncodeStatusResponse(waiter.request_id, routing_.epoch, outcome));
    }
    waiters.clear();
  };
  answer(cut_waiters_);
  if (requested) answer(checkpoint_waiters_);
}


bool Scheduler::AnswerEndedCut(const Frame& identity, uint64_t request_id,
                               const wire::CheckpointCutRequest& cut) {
  if (last_cut_clock_ == 0 || cut.clock != last_cut_clock_ ||
      (cuts_.active() && cuts_.active_clock() == cut.clock)) {
    return false;
  }
  if (cut.done || !last_cut_outcome_.ok()) {
    // A finish sent again was recorded already; an arrival learns how the cut ended.
    Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch,
                                               cut.done ? Status::Ok() : last_cut_outcome_));
  } else {
    wire::CutInfo ended;
    ended.clock = last_cut_clock_;
    Reply(identity, wire::EncodeCutInfoResponse(request_id, routing_.epoch, ended));
  }
  return true;
}

}  // namespace ember::scheduler
