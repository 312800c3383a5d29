// The tier benchmark's timed phases (bench/tier_bench.h): request threads replaying their batches
// on one table.
#pragma once

#include <cstdint>

#include "bench/tier_bench.h"
#include "bench/tier_requests.h"
#include "common/status.h"
#include "embedding/embedding_table.h"

namespace ember::bench {

enum class TierPhase { kPull, kPush, kPullThenPush };

// Replays `replay`'s next batches from config.threads threads for `seconds`: pulls, pushes, or (as
// training does) a pull of each request's keys and then a push of gradients for them. With
// lookahead > 0 each thread hints the keys of its next `lookahead` requests as soon as it takes
// them (it takes that far ahead) and releases a request's hint after its push.
Result<TierPhaseFigures> RunTierPhase(const TierBenchOptions& config,
                                      embedding::EmbeddingTable& table, TierReplay& replay,
                                      TierPhase phase, double seconds, uint32_t lookahead = 0);

}  // namespace ember::bench
