// SilenceLog: says in the log when a peer that is asked regularly (the scheduler, by heartbeats)
// stops answering, and when it answers again, once each rather than at every attempt.
//
// Not thread-safe: one per asking thread.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/status.h"

namespace ember {

// Whether a call's outcome is the peer's silence (Unavailable or DeadlineExceeded: no answer, or
// none in time) rather than an answer: what is worth asking again.
bool IsSilence(const Status& outcome);

class SilenceLog {
 public:
  // `who` names the asker in the log lines ("server 3", "trainer 1"); `peer` what it asks.
  SilenceLog(std::string who, std::string peer) : who_(std::move(who)), peer_(std::move(peer)) {}

  // The outcome of one call: Unavailable or DeadlineExceeded is silence, anything else an answer.
  void Record(const Status& outcome);

 private:
  const std::string who_;
  const std::string peer_;
  std::optional<std::chrono::steady_clock::time_point> silent_since_;
};

}  // namespace ember
