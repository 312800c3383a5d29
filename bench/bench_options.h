// BenchOptions: what one `ember bench` run does (bench/bench.h runs it). The fields mirror the
// command's flags, and errors about them name the flags (`--rounds must be at least 1`).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "ps/client/client.h"

namespace ember::bench {

struct BenchOptions {
  std::string scheduler;  // a running cluster's; empty: start one in this process
  std::string table = "bench";
  uint32_t servers = 1;
  uint32_t server_threads = 0;  // per server (flag or ps::DefaultWorkerThreads); 0: unknown
  uint32_t clients = 1;
  uint32_t keys_per_request = 16384;
  uint32_t max_keys_per_message = ps::ClientOptions().max_keys_per_message;
  uint32_t dim = 64;
  std::string optimizer = "adagrad";
  double learning_rate = 0.05;
  double exponent = 1.05;
  uint64_t vocabulary = 10'000'000;
  uint64_t populate = 10'000'000;  // rows created (by pulling keys in rank order) before timing
  uint64_t seed = 1;
  uint32_t requests = 200;  // timed requests per client per operation, over all rounds
  double seconds = 30;      // time limit per operation, over all rounds (ember and raw each)
  uint32_t rounds = 5;      // each round: ember pull, raw pull, ember push, raw push
  // CurveZMQ on every connection, ember's and the raw echo traffic's alike (an in-process
  // cluster makes its own keys; a running one is reached with `security`).
  bool curve = false;
  TransportSecurity security;  // the keys to reach a running cluster (--scheduler) with
};

inline constexpr uint32_t kMaxBenchRounds = 1000;

// InvalidArgument naming the first option out of its range, or the combination that does not
// work (more rounds than requests, a vocabulary too small for distinct keys per request, ...).
Status CheckBenchOptions(const BenchOptions& options);

}  // namespace ember::bench
