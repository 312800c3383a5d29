// ProgressMeter: how far a long phase (populating rows, a bulk load, writing or loading a
// checkpoint, draining a server) has got, with its rate and ETA. On a terminal it is a bar
// redrawn in place; otherwise a plain line now and then, for logs. A phase that ends before
// `show_after_seconds` prints nothing, so short runs and tests stay quiet.
//
//   populating [#########...........]  45%  4.50M/10.0M rows  1.21M rows/s  ETA 4s
//   populating: 45% (4.50M of 10.0M rows), 1.21M rows/s, ETA 4s
//   populating: 10.0M rows in 8.3s (1.21M rows/s)
//
// Thread-safety: Add and Set may be called from any thread; a thread of the meter's own prints.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace ember {

struct ProgressOptions {
  std::string label;   // what is going on: "populating", "server 0: writing checkpoint"
  std::string unit;    // what is counted: "rows", "partitions"
  uint64_t total = 0;  // 0: unknown (no percentage, no ETA)
  std::FILE* out = stdout;
  std::optional<bool> terminal;       // unset: whether `out` is a terminal
  double show_after_seconds = 2;      // nothing at all for a shorter phase
  double line_every_seconds = 10;     // plain lines
  double redraw_every_seconds = 0.2;  // the bar
};

class ProgressMeter {
 public:
  explicit ProgressMeter(ProgressOptions options);
  ~ProgressMeter();  // Finish()
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;

  void Add(uint64_t count) { done_.fetch_add(count, std::memory_order_relaxed); }
  void Set(uint64_t done) { done_.store(done, std::memory_order_relaxed); }
  uint64_t total() const { return options_.total; }

  // Stops updating; once anything was shown, prints the closing line (the count, time and rate).
  // Idempotent.
  void Finish();

  // One update's text, without a newline: the bar (`bar`) or the plain line.
  static std::string Describe(const ProgressOptions& options, uint64_t done, double seconds,
                              bool bar);
  // The closing line's text.
  static std::string Summarize(const ProgressOptions& options, uint64_t done, double seconds);

 private:
  void PrintUntilFinished();
  double Elapsed() const;

  const ProgressOptions options_;
  const bool terminal_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::atomic<uint64_t> done_{0};
  std::mutex mutex_;
  std::condition_variable finishing_;
  bool finished_ = false;  // under mutex_
  bool shown_ = false;     // written by the printing thread, read after it joined
  std::thread printer_;
};

}  // namespace ember
