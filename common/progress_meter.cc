// ProgressMeter: the bar, the plain lines and the thread that prints them.
#include "common/progress_meter.h"

#include <unistd.h>

#include <algorithm>

#include "common/human_format.h"

namespace ember {
namespace {

constexpr int kBarWidth = 20;

bool IsTerminal(std::FILE* out) { return out != nullptr && isatty(fileno(out)) == 1; }

std::string Rate(const ProgressOptions& options, uint64_t done, double seconds) {
  return FormatCount(seconds > 0 ? done / seconds : 0) + " " + options.unit + "/s";
}

}  // namespace

ProgressMeter::ProgressMeter(ProgressOptions options)
    : options_(std::move(options)),
      terminal_(options_.terminal.value_or(IsTerminal(options_.out))) {
  printer_ = std::thread([this] { PrintUntilFinished(); });
}

ProgressMeter::~ProgressMeter() { Finish(); }

double ProgressMeter::Elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string ProgressMeter::Describe(const ProgressOptions& options, uint64_t done, double seconds,
                                    bool bar) {
  const std::string rate = Rate(options, done, seconds);
  if (options.total == 0) {
    return options.label + ": " + FormatCount(done) + " " + options.unit + ", " + rate;
  }
  const double fraction = std::min(1.0, static_cast<double>(done) / options.total);
  const double per_second = seconds > 0 ? done / seconds : 0;
  const std::string eta = FormatDuration(
      per_second > 0 ? (options.total - std::min(done, options.total)) / per_second : -1);
  const int percent = static_cast<int>(100 * fraction);
  if (bar) {
    const int filled = static_cast<int>(fraction * kBarWidth);
    char percent_text[8];
    std::snprintf(percent_text, sizeof(percent_text), "%3d%%", percent);
    return options.label + " [" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') +
           "] " + percent_text + "  " + FormatCount(done) + "/" + FormatCount(options.total) + " " +
           options.unit + "  " + rate + "  ETA " + eta;
  }
  return options.label + ": " + std::to_string(percent) + "% (" + FormatCount(done) + " of " +
         FormatCount(options.total) + " " + options.unit + "), " + rate + ", ETA " + eta;
}

std::string ProgressMeter::Summarize(const ProgressOptions& options, uint64_t done,
                                     double seconds) {
  return options.label + ": " + FormatCount(done) + " " + options.unit + " in " +
         FormatDuration(seconds) + " (" + Rate(options, done, seconds) + ")";
}

void ProgressMeter::PrintUntilFinished() {
  const double every = terminal_ ? options_.redraw_every_seconds : options_.line_every_seconds;
  std::unique_lock lock(mutex_);
  // The first update comes once the phase has lasted show_after_seconds, then one every `every`.
  double next = options_.show_after_seconds;
  while (!finished_) {
    const auto wake = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   std::chrono::duration<double>(next));
    if (finishing_.wait_until(lock, wake, [this] { return finished_; })) break;
    const double seconds = Elapsed();
    const std::string text =
        Describe(options_, done_.load(std::memory_order_relaxed), seconds, terminal_);
    if (terminal_) {
      std::fprintf(options_.out, "\r%s\x1b[K", text.c_str());
    } else {
      std::fprintf(options_.out, "%s\n", text.c_str());
    }
    std::fflush(options_.out);
    shown_ = true;
    next = std::max(next + every, seconds);
  }
}

void ProgressMeter::Finish() {
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
  }
  finishing_.notify_all();
  printer_.join();
  if (!shown_) return;
  const std::string text = Summarize(options_, done_.load(), Elapsed());
  std::fprintf(options_.out, terminal_ ? "\r%s\x1b[K\n" : "%s\n", text.c_str());
  std::fflush(options_.out);
}

}  // namespace ember
