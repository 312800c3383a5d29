// TierRequests: the tier benchmark's Zipf requests, drawn ahead of the timed phases.
#include "bench/tier_requests.h"

#include <random>
#include <thread>
#include <unordered_set>

#include "bench/tier_bench.h"
#include "trainer/zipf.h"

namespace ember::bench {
namespace {

KeyBatch DrawBatch(const TierBenchOptions& options, const trainer::ZipfSampler& sampler,
                   uint64_t hot_rows, std::mt19937_64& rng) {
  std::unordered_set<uint64_t> unique, hot;
  // Bounded: at most 4x the request size in draws.
  for (uint32_t draw = 0;
       draw < 4 * options.keys_per_request && unique.size() < options.keys_per_request; ++draw) {
    const uint64_t rank = sampler.Rank(trainer::UniformDouble(rng));
    const uint64_t key = sampler.KeyOfRank(rank) % options.rows;
    unique.insert(key);
    if (rank < hot_rows) hot.insert(key);
  }
  return KeyBatch{std::vector<uint64_t>(unique.begin(), unique.end()), hot.size()};
}

}  // namespace

TierRequests::TierRequests(const TierBenchOptions& options, uint64_t hot_rows,
                           uint32_t batches_per_thread)
    : per_thread_(options.threads) {
  const trainer::ZipfSampler sampler(options.rows, options.exponent, true, kTierSamplerSalt);
  std::vector<std::thread> drawers;
  for (uint32_t t = 0; t < options.threads; ++t) {
    drawers.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      per_thread_[t].reserve(batches_per_thread);
      for (uint32_t b = 0; b < batches_per_thread; ++b) {
        per_thread_[t].push_back(DrawBatch(options, sampler, hot_rows, rng));
      }
    });
  }
  for (auto& drawer : drawers) drawer.join();
}

}  // namespace ember::bench
