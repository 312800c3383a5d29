// Key batches and shares.
#include "bench/internal/key_batches.h"

#include <algorithm>
#include <random>
#include <unordered_set>

#include "trainer/zipf.h"

namespace ember::bench {

std::vector<KeyBatch> MakeKeyBatches(const BenchOptions& config, uint32_t client, size_t count) {
  const trainer::ZipfSampler sampler(config.vocabulary, config.exponent, true, config.seed);
  std::mt19937_64 rng(config.seed * 1'000'003 + client);
  std::vector<KeyBatch> batches(count);
  for (KeyBatch& batch : batches) {
    std::unordered_set<uint64_t> seen;
    seen.reserve(config.keys_per_request * 2);
    const uint64_t zipf_attempts = uint64_t{20} * config.keys_per_request;
    for (uint64_t attempt = 0; batch.size() < config.keys_per_request; ++attempt) {
      const uint64_t key = attempt < zipf_attempts
                               ? sampler(rng)
                               : sampler.KeyOfRank(trainer::UniformBelow(rng, config.vocabulary));
      if (seen.insert(key).second) batch.push_back(key);
    }
  }
  return batches;
}

uint64_t ShareStart(uint64_t total, uint64_t part, uint64_t parts) {
  return total / parts * part + std::min(part, total % parts);
}

size_t ShareOf(size_t keys, size_t peer, size_t peers) {
  return ShareStart(keys, peer + 1, peers) - ShareStart(keys, peer, peers);
}

}  // namespace ember::bench
