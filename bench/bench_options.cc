// BenchOptions checks.
#include "bench/bench_options.h"

#include <cmath>

#include "embedding/table_config.h"

namespace ember::bench {

Status CheckBenchOptions(const BenchOptions& options) {
  const struct {
    const char* flag;
    uint64_t value;
    uint64_t max;
  } counts[] = {
      {"servers", options.servers, 256},
      {"server-threads", options.server_threads, 256},
      {"clients", options.clients, 256},
      {"keys-per-request", options.keys_per_request, 2'000'000},
      {"max-keys-per-message", options.max_keys_per_message, 2'000'000},
      {"dim", options.dim, embedding::kMaxTableDim},
      {"requests", options.requests, 100'000'000},
      {"rounds", options.rounds, kMaxBenchRounds},
  };
  for (const auto& count : counts) {
    if (count.value == 0)
      return InvalidArgument(std::string("--") + count.flag + " must be at least 1");
    if (count.value > count.max) {
      return InvalidArgument(std::string("--") + count.flag + " must be at most " +
                             std::to_string(count.max));
    }
  }
  if (options.rounds > options.requests) {
    return InvalidArgument("--rounds must be at most --requests (" +
                           std::to_string(options.requests) +
                           "): each round times at least one request per client");
  }
  if (options.vocabulary > uint64_t{1} << 62) {
    return InvalidArgument("--vocabulary must be at most " + std::to_string(uint64_t{1} << 62));
  }
  if (options.vocabulary < uint64_t{4} * options.keys_per_request) {
    return InvalidArgument(
        "--vocabulary must be at least 4x --keys-per-request (each request holds distinct keys)");
  }
  if (options.populate > options.vocabulary) {
    return InvalidArgument("--populate must be at most --vocabulary (" +
                           std::to_string(options.vocabulary) + ")");
  }
  if (!std::isfinite(options.exponent) || options.exponent < 0) {
    return InvalidArgument("--exponent must be a number >= 0");
  }
  if (!std::isfinite(options.seconds) || options.seconds <= 0) {
    return InvalidArgument("--seconds must be a number > 0");
  }
  if (options.scheduler.find('*') != std::string::npos) {
    return InvalidArgument("--scheduler must be a concrete endpoint, got '" + options.scheduler +
                           "'");
  }
  return embedding::OptimizerKindFromName(options.optimizer).status().WithContext("--optimizer");
}

}  // namespace ember::bench
