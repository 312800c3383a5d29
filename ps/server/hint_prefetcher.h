// HintPrefetcher: a parameter server's look-ahead worker. Hints (the keys of a batch a trainer
// will pull and push a few steps later: common/wire_data_plane.h, HintRequest) wait in a bounded
// queue; one thread takes them in arrival order and runs them (the service has the table read
// their rows from disk and pin them: EmbeddingTable::Prefetch), and every sweep interval, also
// when no hint comes, it sweeps the pins of hints that expired.
//
// The queue holds at most `capacity` hints: Offer refuses one more (the caller counts the refusal
// and answers it; a hint is advisory, so a refused one costs only speed). A hint whose rows could
// not all be pinned (the pin budget was full) is parked, up to `capacity` of them, and goes back
// to the front of the queue, in order, when pins are released (Unpark), so that a trainer looking
// further ahead than the pin budget holds gets its nearest batches pinned first. Hints still
// queued or parked when the object is destroyed are dropped.
//
// Thread-safety: Offer and the counters may be called from many threads at once; the callbacks
// run on the worker thread only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/millis.h"

namespace ember::embedding {
class EmbeddingTable;
}  // namespace ember::embedding

namespace ember::ps {

struct QueuedHint {
  embedding::EmbeddingTable* table = nullptr;  // borrowed from the service, outlives the queue
  uint64_t id = 0;                              // the table's id for the hint (sender and hint)
  std::vector<uint64_t> keys;
  std::chrono::steady_clock::time_point expires;
};

class HintPrefetcher {
 public:
  using Run = std::function<void(QueuedHint& hint)>;
  using Sweep = std::function<void(std::chrono::steady_clock::time_point now)>;

  HintPrefetcher(size_t capacity, Run run, Sweep sweep, Millis sweep_interval);
  ~HintPrefetcher();
  HintPrefetcher(const HintPrefetcher&) = delete;
  HintPrefetcher& operator=(const HintPrefetcher&) = delete;

  // Queues `hint` for the worker; false (and nothing queued) when `capacity` hints wait already.
  bool Offer(QueuedHint hint);
  // Sets `hint` aside until Unpark; when `capacity` are parked, the oldest is dropped.
  void Park(QueuedHint hint);
  // Puts the parked hints back at the front of the queue, oldest first.
  void Unpark();
  // Drops the queued or parked hint `id` of `table`; whether there was one.
  bool Forget(const embedding::EmbeddingTable* table, uint64_t id);
  // Hints waiting now, and hints run since the start.
  size_t queued() const;
  uint64_t hints_run() const;

 private:
  void Loop();

  const size_t capacity_;
  const Run run_;
  const Sweep sweep_;
  const Millis sweep_interval_;
  mutable std::mutex mutex_;  // guards queue_, parked_, run_count_, stopping_
  std::condition_variable wake_;
  std::deque<QueuedHint> queue_;
  std::deque<QueuedHint> parked_;
  uint64_t run_count_ = 0;
  bool stopping_ = false;
  std::thread worker_;  // last: started once everything above is
};

}  // namespace ember::ps
