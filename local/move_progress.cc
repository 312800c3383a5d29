// MoveProgress implementation.
#include "local/move_progress.h"

namespace ember::local {

void MoveProgress::Add(TimePoint now, uint64_t done, uint64_t outstanding) {
  // Counting starts afresh when nothing was outstanding (or the scheduler restarted its count).
  if (!first_time_ || outstanding_ == 0 || done < last_done_) {
    first_time_ = now;
    first_done_ = done;
  }
  last_time_ = now;
  last_done_ = done;
  outstanding_ = outstanding;
}

std::optional<double> MoveProgress::MovesPerSecond() const {
  if (!first_time_) return std::nullopt;
  const double seconds = std::chrono::duration<double>(last_time_ - *first_time_).count();
  if (seconds <= 0) return std::nullopt;
  return (last_done_ - first_done_) / seconds;
}

std::optional<double> MoveProgress::EtaSeconds() const {
  if (!first_time_) return std::nullopt;
  if (outstanding_ == 0) return 0.0;
  const std::optional<double> rate = MovesPerSecond();
  if (!rate || *rate <= 0) return std::nullopt;
  return outstanding_ / *rate;
}

}  // namespace ember::local
