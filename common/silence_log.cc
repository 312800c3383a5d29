// SilenceLog implementation.
#include "common/silence_log.h"

#include <spdlog/spdlog.h>

namespace ember {

bool IsSilence(const Status& outcome) {
  return outcome.code() == StatusCode::kUnavailable ||
         outcome.code() == StatusCode::kDeadlineExceeded;
}

void SilenceLog::Record(const Status& outcome) {
  const bool silent = IsSilence(outcome);
  const auto now = std::chrono::steady_clock::now();
  if (silent && !silent_since_) {
    silent_since_ = now;
    spdlog::warn("{}: no answer from {} ({}); asking again until it answers", who_, peer_,
                 outcome.ToString());
  } else if (!silent && silent_since_) {
    spdlog::info("{}: {} answers again after {:.1f} s", who_, peer_,
                 std::chrono::duration<double>(now - *silent_since_).count());
    silent_since_.reset();
  }
}

}  // namespace ember
