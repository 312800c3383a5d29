// TrainerClocks: the scheduler's view of the trainers of a run: who is a member, each one's clock,
// who is alive, and whether a trainer may start its next step (at once in asp; gated in bsp/ssp).
//
// A trainer joins when it registers (once the expected number has joined, a late one starts at the
// clock of the slowest live trainer), reports
// its clock after each step's pushes were acknowledged, and leaves when its data is done. One that
// sends nothing (no heartbeat, no clock, no registration) for `trainer_timeout` is dead: with the
// `continue` policy (and always in asp, where nobody waits for anybody) it is dropped, with `stop`
// the run fails with an error naming it.
//
// Pure bookkeeping with the time passed in, so tests drive it directly. Not thread-safe: the
// scheduler calls it from its one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/sync_options.h"
#include "common/wire.h"

namespace ember::scheduler {

class TrainerClocks {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit TrainerClocks(SyncOptions options) : options_(options) {}

  // Makes `trainer` a member (again: a resent registration keeps its clock; in asp one that left
  // or died is live again) and returns the clock it starts from.
  uint64_t Join(uint32_t trainer, const std::string& name, TimePoint now);
  // Any sign of life. NotFound for a trainer that never joined; FailedPrecondition for one that
  // left or was declared dead.
  Status Heartbeat(uint32_t trainer, TimePoint now);
  // `trainer` completed step `clock` (its pushes are acknowledged). InvalidArgument if the clock
  // goes backwards; errors as for Heartbeat.
  Status Report(uint32_t trainer, uint64_t clock, TimePoint now);
  // `trainer` finished its data after `clock` steps; nobody waits for it any more.
  Status Leave(uint32_t trainer, uint64_t clock, TimePoint now);
  // Declares dead every live member silent for longer than trainer_timeout; returns their ids.
  std::vector<uint32_t> ExpireSilent(TimePoint now);

  // For a trainer that completed `clock`: the grant when it may start its next step, nullopt
  // while it must wait, or Aborted once the run failed (stop policy).
  Result<std::optional<wire::ClockGrant>> TryGrant(uint64_t clock) const;

  Status failure() const { return failure_; }
  bool is_member(uint32_t trainer) const;
  // A member's clock (steps completed, or the clock it joined at).
  uint64_t clock_of(uint32_t trainer) const { return members_[trainer]->clock; }
  // Slowest live member's clock (0 with none).
  uint64_t min_live_clock() const;
  // Highest clock any member ever reported.
  uint64_t highest_clock() const { return highest_clock_; }
  // Live members that have reported a clock (trainers at work, not clients that only registered).
  std::vector<uint32_t> live_trainers() const;
  // Members by state (clients that only registered count as live).
  struct MemberCounts {
    uint32_t live = 0, left = 0, dead = 0;
  };
  MemberCounts CountMembers() const;
  // Live members heard from within trainer_timeout (a registered client that went quiet in asp
  // stays live, but is not active).
  uint32_t CountActive(TimePoint now) const;

  enum class State : uint8_t { kLive, kLeft, kDead };
  // What a restarted scheduler needs of the members (scheduler/scheduler_state.h): all of it but
  // when each was last heard from.
  struct SavedMember {
    uint32_t id = 0;
    std::string name;
    State state = State::kLive;
    uint64_t first_clock = 1;
    uint64_t clock = 0;
    bool reported = false;
  };
  struct Saved {
    std::vector<SavedMember> members;
    uint32_t joined = 0;
    uint64_t highest_clock = 0;
    std::string failure;  // the message of the run's failure; empty: none
  };
  Saved Save() const;
  // Replaces every member with the saved ones, each heard from at `now`: a trainer has its
  // trainer_timeout from the restart to reach the scheduler again. The saved clocks may be behind
  // (a clock report alone is not saved): each live member's counts as stale until it reports
  // again. A stale clock only delays grants (in bsp a grant waits for every live member, which
  // reports its true clock first), but it must not place a newcomer or a requested cut.
  void Restore(const Saved& saved, TimePoint now);
  // Whether a live member's clock is stale (see Restore).
  bool any_stale() const;

 private:
  struct Member {
    std::string name;
    State state = State::kLive;
    uint64_t first_clock = 1;  // first step it takes part in
    uint64_t clock = 0;        // steps completed
    TimePoint last_seen;
    bool reported = false;     // has reported a clock
    bool stale = false;        // restored: its clock may be behind until it reports again
  };

  Result<Member*> Find(uint32_t trainer, TimePoint now);
  std::string Describe(uint32_t trainer) const;

  const SyncOptions options_;
  std::vector<std::optional<Member>> members_;  // by trainer id
  uint32_t joined_ = 0;
  uint64_t highest_clock_ = 0;  // of any member ever: where a trainer joining an empty run starts
  Status failure_;
};

}  // namespace ember::scheduler
