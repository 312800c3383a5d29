// Creating a benchmark's rows (populate.h).
#include "bench/internal/populate.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "bench/internal/key_batches.h"
#include "common/progress_meter.h"
#include "trainer/zipf.h"

namespace ember::bench {

Result<PopulateFigures> Populate(const BenchOptions& config,
                                 std::vector<std::unique_ptr<RequestDriver>>& pull_drivers) {
  const trainer::ZipfSampler sampler(config.vocabulary, config.exponent, true, config.seed);
  const auto start = std::chrono::steady_clock::now();
  ProgressMeter meter({.label = "populating", .unit = "rows", .total = config.populate});
  std::vector<Status> statuses(pull_drivers.size());
  std::vector<std::thread> threads;
  for (size_t d = 0; d < pull_drivers.size(); ++d) {
    threads.emplace_back([&, d] {
      const uint64_t end = ShareStart(config.populate, d + 1, pull_drivers.size());
      KeyBatch keys;
      for (uint64_t rank = ShareStart(config.populate, d, pull_drivers.size());
           rank < end && statuses[d].ok(); rank += keys.size()) {
        keys.clear();
        for (uint64_t i = rank; i < std::min<uint64_t>(end, rank + config.keys_per_request); ++i) {
          keys.push_back(sampler.KeyOfRank(i));
        }
        statuses[d] = pull_drivers[d]->Request(keys);
        meter.Add(keys.size());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  meter.Finish();
  for (const Status& status : statuses) RETURN_IF_ERROR(status.WithContext("populating"));
  PopulateFigures figures;
  figures.rows = config.populate;
  figures.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  figures.rows_per_second = figures.seconds > 0 ? figures.rows / figures.seconds : 0;
  return figures;
}

}  // namespace ember::bench
