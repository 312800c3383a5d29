// HintPrefetcher: the bounded queue of look-ahead hints and its worker thread.
#include "ps/server/hint_prefetcher.h"

#include <iterator>
#include <utility>

#include "common/thread_name.h"

namespace ember::ps {

HintPrefetcher::HintPrefetcher(size_t capacity, Run run, Sweep sweep, Millis sweep_interval)
    : capacity_(capacity),
      run_(std::move(run)),
      sweep_(std::move(sweep)),
      sweep_interval_(sweep_interval),
      worker_([this] { Loop(); }) {}

HintPrefetcher::~HintPrefetcher() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  worker_.join();
}

bool HintPrefetcher::Offer(QueuedHint hint) {
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= capacity_) return false;
    queue_.push_back(std::move(hint));
  }
  wake_.notify_one();
  return true;
}

void HintPrefetcher::Park(QueuedHint hint) {
  std::lock_guard lock(mutex_);
  if (parked_.size() >= capacity_) parked_.pop_front();
  parked_.push_back(std::move(hint));
}

void HintPrefetcher::Unpark() {
  {
    std::lock_guard lock(mutex_);
    if (parked_.empty()) return;
    queue_.insert(queue_.begin(), std::make_move_iterator(parked_.begin()),
                  std::make_move_iterator(parked_.end()));
    parked_.clear();
  }
  wake_.notify_one();
}

bool HintPrefetcher::Forget(const embedding::EmbeddingTable* table, uint64_t id) {
  std::lock_guard lock(mutex_);
  auto same = [&](const QueuedHint& hint) { return hint.table == table && hint.id == id; };
  return std::erase_if(queue_, same) + std::erase_if(parked_, same) > 0;
}

size_t HintPrefetcher::queued() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

uint64_t HintPrefetcher::hints_run() const {
  std::lock_guard lock(mutex_);
  return run_count_;
}

void HintPrefetcher::Loop() {
  SetThreadName("ember-prefetch");
  auto next_sweep = std::chrono::steady_clock::now() + sweep_interval_;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_until(lock, next_sweep, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) break;
    if (!queue_.empty()) {
      QueuedHint hint = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      run_(hint);
      lock.lock();
      ++run_count_;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_sweep) {
      lock.unlock();
      sweep_(now);
      lock.lock();
      next_sweep = now + sweep_interval_;
    }
  }
}

}  // namespace ember::ps
