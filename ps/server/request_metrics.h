// RequestMetrics: a server's requests, errors and handling latency per request kind (pull, push,
// stats, ...), counted lock-free on the request path and read at scrape time by the metrics
// endpoint (ps/server/server_metrics.h).
//
// Recording a request costs one steady_clock read pair and a few relaxed atomic adds: a kind
// finds its slot by a scan over the kinds seen so far (a dozen at most), and latencies go into
// fixed buckets. Kinds are the wire's request kind names, string literals that live for the whole
// program; the first request of a kind claims a slot under a mutex.
//
// Thread-safety: Record() and Snapshot() may be called from any thread at once.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

namespace ember::ps {

class RequestMetrics {
 public:
  // Upper bounds of the latency buckets, in seconds (the last bucket, +Inf, is implied).
  static constexpr std::array<double, 15> kBucketSeconds = {50e-6,  100e-6, 250e-6, 500e-6, 1e-3,
                                                            2.5e-3, 5e-3,   10e-3,  25e-3,  50e-3,
                                                            100e-3, 250e-3, 500e-3, 1.0,    2.5};

  // What a scrape sees of one kind.
  struct KindFigures {
    std::string_view kind;
    uint64_t requests = 0;
    uint64_t errors = 0;
    double seconds = 0;                                         // summed handling time
    std::array<uint64_t, kBucketSeconds.size() + 1> buckets{};  // not cumulative; last: +Inf
  };

  // One request of `kind` (a string literal) handled in `elapsed`; `failed` when its answer was an
  // error.
  void Record(std::string_view kind, std::chrono::nanoseconds elapsed, bool failed);
  // Every kind seen so far.
  std::vector<KindFigures> Snapshot() const;

 private:
  static constexpr size_t kMaxKinds = 24;  // kinds beyond it count in the last slot
  struct Slot {
    std::string_view kind;  // written before the slot is published (used_)
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> errors{0};
    std::atomic<uint64_t> nanoseconds{0};
    std::array<std::atomic<uint64_t>, kBucketSeconds.size() + 1> buckets{};
  };
  Slot& SlotFor(std::string_view kind);

  std::array<Slot, kMaxKinds> slots_;
  std::atomic<size_t> used_{0};
  std::mutex claim_mutex_;  // guards claiming a slot
};

// Times one request for RequestMetrics, from construction to destruction. `kind` is read at
// destruction (the handler names it once the request is decoded); the request failed when
// `*errors_counted` moved on meanwhile (the handler's count of error answers on this thread).
class RequestTimer {
 public:
  RequestTimer(RequestMetrics& metrics, const std::string_view& kind,
               const uint64_t& errors_counted)
      : metrics_(metrics),
        kind_(kind),
        errors_counted_(errors_counted),
        errors_before_(errors_counted),
        started_(std::chrono::steady_clock::now()) {}
  ~RequestTimer() {
    metrics_.Record(kind_, std::chrono::steady_clock::now() - started_,
                    errors_counted_ != errors_before_);
  }
  RequestTimer(const RequestTimer&) = delete;
  RequestTimer& operator=(const RequestTimer&) = delete;

 private:
  RequestMetrics& metrics_;
  const std::string_view& kind_;
  const uint64_t& errors_counted_;
  const uint64_t errors_before_;
  const std::chrono::steady_clock::time_point started_;
};

}  // namespace ember::ps
