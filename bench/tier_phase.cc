// The tier benchmark's timed phases: request threads replaying their batches on a table, with
// look-ahead hints prefetched beside them.
#include "bench/tier_phase.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "bench/internal/process_usage.h"

namespace ember::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Hints of one request thread's coming batches, prefetched in order by a thread of their own
// (as a server's prefetching runs beside its requests); stops with the queue.
class Prefetcher {
 public:
  explicit Prefetcher(embedding::EmbeddingTable& table)
      : table_(table), thread_([this] { Run(); }) {}
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wanted_.notify_all();
    thread_.join();
  }
  void Hint(uint64_t id, std::vector<uint64_t> keys) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.emplace_back(id, std::move(keys));
    }
    wanted_.notify_all();
  }
  Status status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      wanted_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      auto [id, keys] = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      Status prefetched =
          table_.Prefetch(id, keys, std::chrono::steady_clock::now() + std::chrono::seconds(30))
              .status();
      lock.lock();
      if (!prefetched.ok() && status_.ok()) status_ = prefetched;
    }
  }

  embedding::EmbeddingTable& table_;
  std::mutex mu_;
  std::condition_variable wanted_;
  std::deque<std::pair<uint64_t, std::vector<uint64_t>>> queue_;
  bool stopping_ = false;
  Status status_;
  std::thread thread_;
};

}  // namespace

Result<TierPhaseFigures> RunTierPhase(const TierBenchOptions& config,
                                      embedding::EmbeddingTable& table, TierReplay& replay,
                                      TierPhase phase, double seconds, uint32_t lookahead) {
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> latencies(config.threads);
  std::vector<uint64_t> keys_done(config.threads, 0);
  std::vector<uint64_t> hot_keys(config.threads, 0);
  std::vector<double> pull_seconds(config.threads, 0), push_seconds(config.threads, 0);
  std::vector<Status> statuses(config.threads);
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  const double cpu_before = ProcessCpuSeconds();
  for (uint32_t t = 0; t < config.threads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> values(size_t{config.keys_per_request} * config.dim, 1e-3f);
      std::unique_ptr<Prefetcher> prefetcher;
      if (lookahead > 0) prefetcher = std::make_unique<Prefetcher>(table);
      std::deque<const KeyBatch*> coming;  // this request's batch, then the ones hinted
      const uint64_t hint_base = uint64_t{t} << 40;
      uint64_t next_hint = hint_base;
      for (uint64_t request = hint_base; !stop.load(std::memory_order_relaxed) && statuses[t].ok();
           ++request) {
        while (coming.size() < 1 + lookahead) {
          coming.push_back(&replay.Next(t));
          if (prefetcher) prefetcher->Hint(next_hint, coming.back()->keys);
          ++next_hint;
        }
        const KeyBatch& batch = *coming.front();
        coming.pop_front();
        const std::vector<uint64_t>& keys = batch.keys;
        hot_keys[t] += batch.hot;
        std::span<float> rows(values.data(), keys.size() * config.dim);
        const auto begin = Clock::now();
        if (phase != TierPhase::kPush) statuses[t] = table.Pull(keys, rows);
        const auto pulled = Clock::now();
        if (phase != TierPhase::kPull && statuses[t].ok()) statuses[t] = table.Push(keys, rows);
        const auto end = Clock::now();
        if (prefetcher) table.ReleaseHint(request);
        pull_seconds[t] += std::chrono::duration<double>(pulled - begin).count();
        push_seconds[t] += std::chrono::duration<double>(end - pulled).count();
        latencies[t].push_back(std::chrono::duration<double, std::milli>(end - begin).count());
        keys_done[t] += keys.size();
      }
      if (prefetcher) {
        if (statuses[t].ok()) statuses[t] = prefetcher->status();
        prefetcher.reset();
        for (uint64_t hint = hint_base; hint < next_hint; ++hint) table.ReleaseHint(hint);
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& thread : threads) thread.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu_seconds = ProcessCpuSeconds() - cpu_before;
  for (const Status& status : statuses) RETURN_IF_ERROR(status);
  std::vector<double> all;
  uint64_t keys = 0, hot = 0;
  for (uint32_t t = 0; t < config.threads; ++t) {
    all.insert(all.end(), latencies[t].begin(), latencies[t].end());
    keys += keys_done[t];
    hot += hot_keys[t];
  }
  std::sort(all.begin(), all.end());
  TierPhaseFigures figures;
  figures.keys_per_second = keys / elapsed;
  figures.seconds = elapsed;
  figures.hot_share = keys > 0 ? static_cast<double>(hot) / keys : 0;
  figures.cpu_ns_per_key = keys > 0 ? 1e9 * cpu_seconds / keys : 0;
  for (uint32_t t = 0; t < config.threads; ++t) {
    if (pull_seconds[t] > 0) figures.pull_keys_per_second += keys_done[t] / pull_seconds[t];
    if (push_seconds[t] > 0) figures.push_keys_per_second += keys_done[t] / push_seconds[t];
  }
  if (!all.empty()) {
    figures.p50_ms = all[all.size() / 2];
    figures.p99_ms = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  }
  return figures;
}

}  // namespace ember::bench
