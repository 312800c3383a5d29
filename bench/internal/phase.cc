// Phases: the client threads and their figures.
#include "bench/internal/phase.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <latch>
#include <thread>

namespace ember::bench {

using Clock = std::chrono::steady_clock;

Traffic MakeTraffic(std::string name, const std::vector<std::unique_ptr<RequestDriver>>& drivers,
                    const std::vector<std::vector<KeyBatch>>& batches) {
  Traffic traffic{.name = std::move(name), .batches = &batches};
  for (const auto& driver : drivers) traffic.drivers.push_back(driver.get());
  traffic.next_batch.assign(drivers.size(), 0);
  return traffic;
}

PhaseOutcome RunPhase(Traffic& traffic, const PhaseLimits& limits) {
  const size_t threads = traffic.drivers.size();
  std::latch ready(static_cast<std::ptrdiff_t>(threads));
  std::latch go(1);
  Clock::time_point deadline;
  std::vector<Status> statuses(threads);
  std::vector<uint64_t> requests_done(threads, 0);
  std::vector<uint64_t> keys_done(threads, 0);
  std::vector<std::vector<double>> latencies(threads);
  std::vector<std::thread> workers;
  for (size_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const std::vector<KeyBatch>& mine = (*traffic.batches)[t];
      size_t& next = traffic.next_batch[t];
      latencies[t].reserve(limits.requests_per_client);
      ready.count_down();
      go.wait();
      while (statuses[t].ok() && requests_done[t] < limits.requests_per_client &&
             Clock::now() < deadline) {
        const KeyBatch& keys = mine[next++ % mine.size()];
        const auto start = Clock::now();
        statuses[t] = traffic.drivers[t]->Request(keys);
        latencies[t].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        ++requests_done[t];
        keys_done[t] += keys.size();
      }
    });
  }
  ready.wait();
  const auto start = Clock::now();
  deadline = start + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(limits.seconds));
  go.count_down();
  for (auto& worker : workers) worker.join();
  PhaseOutcome outcome;
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (size_t t = 0; t < threads; ++t) {
    if (!statuses[t].ok() && outcome.status.ok()) {
      outcome.status = statuses[t].WithContext(traffic.name);
    }
    outcome.requests += requests_done[t];
    outcome.keys += keys_done[t];
    outcome.latencies_ms.insert(outcome.latencies_ms.end(), latencies[t].begin(),
                                latencies[t].end());
  }
  return outcome;
}

Status WarmUp(Traffic& traffic, double seconds) {
  return RunPhase(traffic, {.requests_per_client = kWarmupRequests, .seconds = seconds}).status;
}

double KeysPerSecond(const PhaseOutcome& phase) {
  return phase.seconds > 0 ? phase.keys / phase.seconds : 0;
}

double Percentile(std::vector<double> sorted_values, double quantile) {
  if (sorted_values.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(quantile * sorted_values.size()));
  return sorted_values[std::clamp<size_t>(rank, 1, sorted_values.size()) - 1];
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

}  // namespace ember::bench
