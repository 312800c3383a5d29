// CheckpointCuts implementation.
#include "scheduler/checkpoint_cuts.h"

#include <cstdio>

#include "common/file_io.h"
#include "common/quote_for_error.h"

namespace ember::scheduler {

std::string PeriodicCutDir(const std::string& dir, uint64_t clock) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%09llu", static_cast<unsigned long long>(clock));
  return dir + "/" + name;
}

Result<uint64_t> CheckpointCuts::Request(const std::string& dir, const std::string& after,
                                         bool chain, uint64_t highest_clock) {
  for (const std::string* path : {&dir, &after}) {
    if (path == &after && after.empty()) continue;
    if (!IsAbsoluteNormalPath(*path)) {
      return InvalidArgument("checkpoint directory " + QuoteForError(*path, kMaxQuotedPath) +
                             " is not an absolute path in normal form (no '.', '..' or empty "
                             "components)");
    }
  }
  if (after == dir) {
    return InvalidArgument("a checkpoint cannot extend itself ('" + dir + "')");
  }
  if (requested_) {
    return FailedPrecondition("a checkpoint into '" + requested_->dir + "' at clock " +
                              std::to_string(requested_->clock) + " is already pending");
  }
  if (active_ && active_->requested) {
    return FailedPrecondition("a checkpoint into '" + active_->cut.dir + "' is under way");
  }
  // Every trainer has completed at most highest_clock, so each still reports highest + 1 and
  // hears the announcement of a cut at highest + 2 in its grant.
  // A chain of at most one checkpoint: the cut is a base (its successors name it as `after`).
  const uint32_t chain_length = chain && after.empty() ? 1 : 0;
  requested_ = wire::CutInfo{highest_clock + 2, dir, 0, false, chain_length, after};
  return requested_->clock;
}

wire::CutInfo CheckpointCuts::AnnouncedAfter(uint64_t clock) const {
  const uint64_t next = clock + 1;
  if (requested_ && requested_->clock == next) return *requested_;
  if (periodic_.every > 0 && next % periodic_.every == 0) {
    return wire::CutInfo{next, PeriodicCutDir(periodic_.dir, next), periodic_.keep, false,
                         periodic_.chain, ""};
  }
  return wire::CutInfo{};
}

Status CheckpointCuts::Arrive(uint32_t trainer, uint64_t clock, TimePoint now) {
  if (active_ && active_->cut.clock != clock) {
    return FailedPrecondition("trainer " + std::to_string(trainer) + " arrived at a cut at clock " +
                              std::to_string(clock) + " while the cut at clock " +
                              std::to_string(active_->cut.clock) + " is under way");
  }
  if (!active_) {
    const wire::CutInfo announced = AnnouncedAfter(clock - 1);
    if (clock == 0 || announced.clock != clock) {
      return InvalidArgument("trainer " + std::to_string(trainer) +
                             " arrived at a checkpoint cut at clock " + std::to_string(clock) +
                             ", but no cut was announced there");
    }
    const bool requested = requested_ && requested_->clock == clock;
    if (requested) requested_.reset();
    active_ = Active{announced, requested, {}, false, now};
  }
  active_->arrived.insert(trainer);
  return Status::Ok();
}

std::optional<wire::CutInfo> CheckpointCuts::ReadyToCoordinate(
    const std::vector<uint32_t>& participants) {
  if (!active_ || active_->coordinating) return std::nullopt;
  for (uint32_t trainer : participants) {
    if (!active_->arrived.count(trainer)) return std::nullopt;
  }
  active_->coordinating = true;
  wire::CutInfo cut = active_->cut;
  cut.coordinate = true;
  return cut;
}

Status CheckpointCuts::CheckProgress(TimePoint now) const {
  if (!active_ || active_->coordinating) return Status::Ok();
  if (now - active_->started > timeout_) {
    return DeadlineExceeded("the checkpoint cut at clock " + std::to_string(active_->cut.clock) +
                            " waited " + std::to_string(timeout_.count()) +
                            " ms for trainers that did not arrive");
  }
  return Status::Ok();
}

wire::CutInfo CheckpointCuts::Finish(bool* requested) {
  if (!active_) {
    *requested = false;
    return wire::CutInfo{};
  }
  wire::CutInfo cut = active_->cut;
  *requested = active_->requested;
  active_.reset();
  return cut;
}

wire::CutInfo CheckpointCuts::requested_cut() const {
  if (requested_) return *requested_;
  if (active_ && active_->requested) return active_->cut;
  return wire::CutInfo{};
}

wire::CutInfo CheckpointCuts::active_cut() const {
  if (!active_) return wire::CutInfo{};
  wire::CutInfo cut = active_->cut;
  cut.coordinate = active_->coordinating;
  return cut;
}

CheckpointCuts::Saved CheckpointCuts::Save() const {
  Saved saved;
  saved.requested = requested_;
  if (active_) {
    saved.active = active_->cut;
    saved.active_requested = active_->requested;
    saved.coordinating = active_->coordinating;
    saved.arrived.assign(active_->arrived.begin(), active_->arrived.end());
  }
  return saved;
}

void CheckpointCuts::Restore(const Saved& saved, TimePoint now) {
  requested_ = saved.requested;
  active_.reset();
  if (saved.active) {
    active_ = Active{*saved.active, saved.active_requested,
                     std::set<uint32_t>(saved.arrived.begin(), saved.arrived.end()),
                     saved.coordinating, now};
  }
}

}  // namespace ember::scheduler
