// Phases of the data-plane benchmark: client threads, one per driver, that all start together and
// send requests (one in flight each) until a request count or a time limit is reached, with the
// requests, keys and latencies they timed. Private to bench/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/internal/key_batches.h"
#include "bench/internal/request_driver.h"
#include "common/status.h"

namespace ember::bench {

inline constexpr uint32_t kWarmupRequests = 3;  // per client, before the clock starts

// What one side of an operation (ember, raw ZeroMQ, or the lookups alone) sends: a driver per
// client thread, that client's key batches, and the batch each client sends next, kept across
// rounds so that later rounds go on through the batches.
struct Traffic {
  std::string name;  // says which side failed: "pull", "raw push", ...
  std::vector<RequestDriver*> drivers;
  const std::vector<std::vector<KeyBatch>>* batches = nullptr;
  std::vector<size_t> next_batch;
};

// How much one phase may send: requests per client thread, and a time limit for all of them.
struct PhaseLimits {
  uint64_t requests_per_client = 0;
  double seconds = 0;
};

struct PhaseOutcome {
  Status status;
  uint64_t requests = 0;
  uint64_t keys = 0;
  double seconds = 0;
  std::vector<double> latencies_ms;
};

Traffic MakeTraffic(std::string name, const std::vector<std::unique_ptr<RequestDriver>>& drivers,
                    const std::vector<std::vector<KeyBatch>>& batches);

// Runs one client thread per driver, all starting together, each sending requests until it has
// sent limits.requests_per_client or limits.seconds have passed; one request in flight per thread.
PhaseOutcome RunPhase(Traffic& traffic, const PhaseLimits& limits);

// Sends kWarmupRequests per client thread, untimed, so that connections and buffers are set up
// before the clock starts.
Status WarmUp(Traffic& traffic, double seconds);

double KeysPerSecond(const PhaseOutcome& phase);
// The value at `quantile` (0..1] of sorted values, by rank; 0 when there are none.
double Percentile(std::vector<double> sorted_values, double quantile);
double Median(std::vector<double> values);

}  // namespace ember::bench
