// Barriers: the scheduler's open barriers and the participants waiting at each.
//
// A barrier is opened by its first arrival, which fixes how many participants complete it (an
// arrival naming another count is refused: no participant can shrink or grow a barrier that
// others wait at). A participant is a connection (its ZeroMQ identity): a resent arrival counts
// once. When the count is reached, every participant is answered and the barrier closes.
// Arrivals are leases: one that waited longer than `lease` (the longest a trainer waits at a
// barrier, sync.clock_timeout) is answered DeadlineExceeded and dropped, so a participant that
// went away holds nothing for longer than that.
//
// Pure bookkeeping with the time passed in; not thread-safe (the scheduler's one thread uses it).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/frame.h"
#include "common/status.h"

namespace ember::scheduler {

class Barriers {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // A participant's request, to be answered.
  struct Arrival {
    Frame identity;
    uint64_t request_id = 0;
  };
  // An arrival and the answer it gets.
  struct Answer {
    Arrival arrival;
    Status status;
  };

  Barriers(uint32_t max_count, std::chrono::milliseconds lease)
      : max_count_(max_count), lease_(lease) {}

  // Whether the connection `participant` (its identity's bytes) already waits at `name`.
  bool Waits(const std::string& name, const std::string& participant) const;
  // Whether a barrier `name` is open.
  bool IsOpen(const std::string& name) const { return open_.count(name) != 0; }
  // An arrival at `name` with `count` participants in all. InvalidArgument (nothing changes)
  // for a count of 0 or above max_count, or another count than the one the barrier was opened
  // with; otherwise the arrivals to answer OK (all of them, once the count is reached; none
  // while it is not).
  Result<std::vector<Answer>> Arrive(const std::string& name, uint32_t count,
                                     std::string participant, Arrival arrival, TimePoint now);
  // Drops the arrivals older than the lease, with their DeadlineExceeded answers.
  std::vector<Answer> Expire(TimePoint now);

  size_t open() const { return open_.size(); }
  size_t waiting() const;
  std::chrono::milliseconds lease() const { return lease_; }

 private:
  struct Waiting {
    Arrival arrival;
    TimePoint since;
  };
  struct Open {
    uint32_t count = 0;
    std::map<std::string, Waiting> arrived;  // by participant
  };

  const uint32_t max_count_;
  const std::chrono::milliseconds lease_;
  std::map<std::string, Open> open_;
};

}  // namespace ember::scheduler
