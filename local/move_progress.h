// MoveProgress: the rate of a cluster's partition moves and when the outstanding ones will be
// done, from snapshots of the scheduler's counts (`ember status --watch`). Pure bookkeeping with
// the time passed in; not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

namespace ember::local {

class MoveProgress {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // A snapshot: `done` moves completed so far, `outstanding` in flight or planned.
  void Add(TimePoint now, uint64_t done, uint64_t outstanding);
  // Moves completed per second since the first snapshot of the current batch of moves (a
  // snapshot with nothing outstanding starts a new one); nullopt before two snapshots.
  std::optional<double> MovesPerSecond() const;
  // Seconds until the outstanding moves are done at that rate: 0 with none outstanding, nullopt
  // before the first snapshot and while no move of the batch has completed.
  std::optional<double> EtaSeconds() const;

 private:
  std::optional<TimePoint> first_time_;
  uint64_t first_done_ = 0;
  TimePoint last_time_;
  uint64_t last_done_ = 0;
  uint64_t outstanding_ = 0;
};

}  // namespace ember::local
