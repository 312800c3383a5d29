// The tier benchmark's requests: each request thread's batches of distinct Zipf keys, drawn
// before any phase is timed and replayed in the same order on every table. Drawing a request's
// keys costs more than serving it from memory, so keys drawn inside a phase made the in-memory
// figures (and every tiered/in-memory ratio) measure the drawing as much as the table; replayed,
// the table in memory and the tiered one also take exactly the same requests.
#pragma once

#include <cstdint>
#include <vector>

namespace ember::bench {

struct TierBenchOptions;

// The salt of the benchmark's Zipf sampler, which maps a popularity rank to a key.
inline constexpr uint64_t kTierSamplerSalt = 7;

// One request's distinct keys, and how many are among the `hot_rows` hottest.
struct KeyBatch {
  std::vector<uint64_t> keys;
  uint64_t hot = 0;
};

class TierRequests {
 public:
  // `batches_per_thread` batches for each of options.threads threads (thread t's random stream
  // seeded with 100 + t, as before); `hot_rows` counts KeyBatch::hot.
  TierRequests(const TierBenchOptions& options, uint64_t hot_rows, uint32_t batches_per_thread);

  // Thread t's n-th batch: its batches in order, from the first again after the last.
  const KeyBatch& Batch(uint32_t thread, uint64_t n) const {
    const std::vector<KeyBatch>& batches = per_thread_[thread];
    return batches[n % batches.size()];
  }

 private:
  std::vector<std::vector<KeyBatch>> per_thread_;
};

// One table's walk through the requests: each phase on the table continues where the phase before
// it stopped. A phase that began again at the first request would replay the requests whose rows
// the phase before it had just brought into memory, and find more of them there the faster that
// phase had gone.
class TierReplay {
 public:
  TierReplay(const TierRequests& requests, uint32_t threads)
      : requests_(requests), next_(threads, 0) {}
  // Thread t's next batch (only thread t calls it).
  const KeyBatch& Next(uint32_t thread) { return requests_.Batch(thread, next_[thread]++); }

 private:
  const TierRequests& requests_;
  std::vector<uint64_t> next_;
};

// Batches drawn per thread by default: with 4,096 keys a request, 8.4M keys a thread (64 MiB), so
// a request comes back after 2,048 others, long after the tier evicted what it alone brought in.
inline constexpr uint32_t kTierRequestsPerThread = 2048;

}  // namespace ember::bench
