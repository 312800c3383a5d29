// PushAccumulator: a server's held-back bsp pushes, combined and applied once per clock.
//
// In a bsp run a trainer's push is deferred: the server copies it here, keyed by (clock, table,
// trainer), and acknowledges it. Once every trainer of the step has pushed, the trainers ask the
// server to apply the clock (ApplyClock): the pushes of the listed trainers are summed per key,
// divided by their number for `mean`, and applied with one optimizer step per key through the
// table's ordinary push. Pushes of that clock from trainers not listed (one that died mid-step)
// are dropped. Applying a clock twice is a no-op, and the second caller returns only after the
// first has finished, so an acknowledged apply always means "applied".
//
// It holds at most `max_pushes` pushes (limits.deferred_pushes_per_clock; in a bsp run the
// pushes held are those of one clock, and any held for other clocks count with them): a push
// beyond is refused (ResourceExhausted) and not held.
//
// Thread-safety: all methods may be called from any thread; Apply runs under the lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "common/limits.h"
#include "common/status.h"
#include "common/sync_options.h"

namespace ember::ps {

class PushAccumulator {
 public:
  explicit PushAccumulator(uint32_t max_pushes = Limits{}.deferred_pushes_per_clock)
      : max_pushes_(max_pushes) {}

  // Applies one combined push (unique keys, keys.size() * dim gradient values) to a table, with
  // the learning rate its pushes carried (0: the table's).
  using ApplyFn = std::function<Status(const std::string& table, std::span<const uint64_t> keys,
                                       std::span<const float> gradients, float learning_rate)>;

  // Holds a copy of a deferred push. FailedPrecondition if `clock` was already applied;
  // ResourceExhausted (LimitExceeded) when max_pushes are held; InvalidArgument when its
  // `learning_rate` differs from that of the pushes to `table` held for `clock` already (one
  // step has one learning rate).
  Status Add(uint64_t clock, uint32_t trainer, const std::string& table,
             std::span<const uint64_t> keys, std::span<const float> gradients,
             float learning_rate = 0);

  // Combines and applies the pushes of `clock` from `trainers` (table by table, in name order),
  // and drops that clock's other pushes and those of older clocks still held. InvalidArgument
  // for an empty trainer list; the first error of `apply` otherwise.
  Status Apply(uint64_t clock, std::span<const uint32_t> trainers, Combine combine,
               const ApplyFn& apply);

  // Whether a held push has a (table, key) that `belongs` (a partition about to move: it is
  // handed over only between clocks, when none of its keys is held).
  bool Holds(const std::function<bool(const std::string& table, uint64_t key)>& belongs) const;

  // Highest clock applied so far (0: none).
  uint64_t applied_clock() const;
  // Pushes held, for stats and tests.
  size_t pending_pushes() const;

 private:
  struct Piece {
    std::vector<uint64_t> keys;
    std::vector<float> gradients;
    float learning_rate = 0;
  };
  using Slot = std::tuple<uint64_t, std::string, uint32_t>;  // clock, table, trainer

  const uint32_t max_pushes_;
  mutable std::mutex mutex_;
  uint64_t applied_clock_ = 0;               // guarded by mutex_
  std::map<Slot, std::vector<Piece>> held_;  // guarded by mutex_
  size_t pieces_ = 0;                        // pushes in held_; guarded by mutex_
};

}  // namespace ember::ps
