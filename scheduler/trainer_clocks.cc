// TrainerClocks implementation.
#include "scheduler/trainer_clocks.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>

#include "common/quote_for_error.h"

namespace ember::scheduler {

std::string TrainerClocks::Describe(uint32_t trainer) const {
  const auto& member = members_[trainer];
  return "trainer " + std::to_string(trainer) + " (" + QuoteForError(member->name) + ")";
}

uint64_t TrainerClocks::min_live_clock() const {
  uint64_t lowest = UINT64_MAX;
  for (const auto& member : members_) {
    if (member && member->state == State::kLive) lowest = std::min(lowest, member->clock);
  }
  return lowest == UINT64_MAX ? 0 : lowest;
}

TrainerClocks::MemberCounts TrainerClocks::CountMembers() const {
  MemberCounts counts;
  for (const auto& member : members_) {
    if (!member) continue;
    if (member->state == State::kLive) ++counts.live;
    if (member->state == State::kLeft) ++counts.left;
    if (member->state == State::kDead) ++counts.dead;
  }
  return counts;
}

uint32_t TrainerClocks::CountActive(TimePoint now) const {
  uint32_t active = 0;
  for (const auto& member : members_) {
    active += member && member->state == State::kLive &&
              now - member->last_seen <= options_.trainer_timeout;
  }
  return active;
}

std::vector<uint32_t> TrainerClocks::live_trainers() const {
  std::vector<uint32_t> live;
  for (uint32_t id = 0; id < members_.size(); ++id) {
    const auto& member = members_[id];
    if (member && member->state == State::kLive && member->reported) live.push_back(id);
  }
  return live;
}

bool TrainerClocks::is_member(uint32_t trainer) const {
  return trainer < members_.size() && members_[trainer].has_value();
}

uint64_t TrainerClocks::Join(uint32_t trainer, const std::string& name, TimePoint now) {
  if (trainer >= members_.size()) members_.resize(trainer + 1);
  auto& member = members_[trainer];
  if (member) {
    member->last_seen = now;
    // In asp nobody waits for anybody, so a trainer that left or was declared dead may simply
    // come back (the same name run again); it goes on from its last clock.
    if (!options_.synchronised() && member->state != State::kLive) {
      member->state = State::kLive;
      spdlog::info("scheduler: {} is back at clock {}", Describe(trainer), member->clock);
    }
    return member->clock;
  }
  bool any_live = false;
  for (const auto& other : members_) any_live |= other && other->state == State::kLive;
  // Until the expected trainers have all joined nothing was granted: everyone starts at 0.
  const bool started = joined_ >= options_.trainers;
  const uint64_t start = !started ? 0 : any_live ? min_live_clock() : highest_clock_;
  member = Member{name, State::kLive, start + 1, start, now, false};
  ++joined_;
  if (start > 0) spdlog::info("scheduler: {} joins at clock {}", Describe(trainer), start);
  return start;
}

Result<TrainerClocks::Member*> TrainerClocks::Find(uint32_t trainer, TimePoint now) {
  if (!is_member(trainer)) {
    return NotFound("trainer " + std::to_string(trainer) + " is not a member of this run");
  }
  Member& member = *members_[trainer];
  if (member.state != State::kLive) {
    return FailedPrecondition(Describe(trainer) + (member.state == State::kLeft
                                                       ? " has left the run"
                                                       : " was declared dead"));
  }
  member.last_seen = now;
  return &member;
}

Status TrainerClocks::Heartbeat(uint32_t trainer, TimePoint now) {
  return Find(trainer, now).status();
}

Status TrainerClocks::Report(uint32_t trainer, uint64_t clock, TimePoint now) {
  ASSIGN_OR_RETURN(Member * member, Find(trainer, now));
  if (clock < member->clock) {
    return InvalidArgument(Describe(trainer) + " reported clock " + std::to_string(clock) +
                           " after clock " + std::to_string(member->clock));
  }
  member->clock = clock;
  member->reported = true;
  member->stale = false;
  highest_clock_ = std::max(highest_clock_, clock);
  return Status::Ok();
}

Status TrainerClocks::Leave(uint32_t trainer, uint64_t clock, TimePoint now) {
  if (is_member(trainer) && members_[trainer]->state == State::kLeft &&
      members_[trainer]->clock == clock) {
    return Status::Ok();  // a resent leave (its answer was lost)
  }
  RETURN_IF_ERROR(Report(trainer, clock, now));
  members_[trainer]->state = State::kLeft;
  spdlog::info("scheduler: {} left after clock {}", Describe(trainer), clock);
  return Status::Ok();
}

std::vector<uint32_t> TrainerClocks::ExpireSilent(TimePoint now) {
  std::vector<uint32_t> expired;
  for (uint32_t id = 0; id < members_.size(); ++id) {
    auto& member = members_[id];
    if (!member || member->state != State::kLive) continue;
    // In asp a client that never reported a clock (a tool, a benchmark) is nobody's concern.
    if (!options_.synchronised() && !member->reported) continue;
    if (now - member->last_seen <= options_.trainer_timeout) continue;
    member->state = State::kDead;
    expired.push_back(id);
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.1f",
                  std::chrono::duration<double>(now - member->last_seen).count());
    const std::string what = Describe(id) + " is gone: nothing heard from it for " + seconds +
                             " s (after clock " + std::to_string(member->clock) + ")";
    if (!options_.synchronised()) {
      spdlog::warn("scheduler: {}", what);
    } else if (options_.on_trainer_failure == TrainerFailurePolicy::kStop) {
      spdlog::error("scheduler: {}; stopping the run (train.on_trainer_failure: stop)", what);
      if (failure_.ok()) {
        failure_ = Aborted(what + "; the run stops (train.on_trainer_failure: stop)");
      }
    } else {
      spdlog::warn("scheduler: {}; the run continues without it", what);
    }
  }
  return expired;
}

Result<std::optional<wire::ClockGrant>> TrainerClocks::TryGrant(uint64_t clock) const {
  if (!failure_.ok()) return failure_;
  if (!options_.synchronised()) {  // asp: nobody waits; the grant only carries announcements
    wire::ClockGrant grant;
    grant.clock = clock;
    grant.min_clock = min_live_clock();
    return std::optional<wire::ClockGrant>(std::move(grant));
  }
  if (joined_ < options_.trainers) return std::optional<wire::ClockGrant>();
  const uint64_t slowest = min_live_clock();
  const uint64_t bound = options_.effective_staleness();
  if (slowest + bound < clock) return std::optional<wire::ClockGrant>();
  wire::ClockGrant grant;
  grant.clock = clock;
  grant.min_clock = slowest;
  for (uint32_t id = 0; id < members_.size(); ++id) {
    const auto& member = members_[id];
    if (member && member->first_clock <= clock && member->clock >= clock) {
      grant.trainers.push_back(id);
    }
  }
  return std::optional<wire::ClockGrant>(std::move(grant));
}

bool TrainerClocks::any_stale() const {
  for (const auto& member : members_) {
    if (member && member->state == State::kLive && member->stale) return true;
  }
  return false;
}

TrainerClocks::Saved TrainerClocks::Save() const {
  Saved saved{{}, joined_, highest_clock_, failure_.ok() ? std::string() : std::string(failure_.message())};
  for (uint32_t id = 0; id < members_.size(); ++id) {
    const auto& member = members_[id];
    if (!member) continue;
    saved.members.push_back(SavedMember{id, member->name, member->state, member->first_clock,
                                        member->clock, member->reported});
  }
  return saved;
}

void TrainerClocks::Restore(const Saved& saved, TimePoint now) {
  members_.clear();
  for (const SavedMember& member : saved.members) {
    if (member.id >= members_.size()) members_.resize(member.id + 1);
    members_[member.id] = Member{member.name,  member.state, member.first_clock,
                                 member.clock, now,           member.reported,
                                 member.state == State::kLive && member.reported};
  }
  joined_ = saved.joined;
  highest_clock_ = saved.highest_clock;
  failure_ = saved.failure.empty() ? Status::Ok() : Aborted(saved.failure);
}

}  // namespace ember::scheduler
