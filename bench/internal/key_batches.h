// The keys the data-plane benchmark sends: batches of distinct Zipf-distributed keys per client,
// and the even split of a range over clients or servers. Private to bench/. Reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bench/bench_options.h"

namespace ember::bench {

using KeyBatch = std::vector<uint64_t>;

// `count` batches of options.keys_per_request distinct keys (push wants unique keys) for client
// `client`, drawn from the Zipf law over options.vocabulary. Once the hot head is exhausted the
// draws fall back to uniform ranks, so a batch always fills.
std::vector<KeyBatch> MakeKeyBatches(const BenchOptions& options, uint32_t client, size_t count);

// Where the share of `part` of `parts` of `total` items starts: shares differ by at most one.
uint64_t ShareStart(uint64_t total, uint64_t part, uint64_t parts);

// The share of a request's keys that goes to peer `peer` of `peers`.
size_t ShareOf(size_t keys, size_t peer, size_t peers);

}  // namespace ember::bench
