// SyncOptions: how many trainers share the tables and how their steps are synchronised.
//
//   asp  every push applies on arrival; no trainer waits for another (the single-trainer default)
//   bsp  a step's pushes from all trainers are combined (mean or sum) and applied once per step;
//        no trainer pulls step t+1's rows before every trainer's step-t pushes are applied
//   ssp  pushes apply on arrival, but a trainer that completed clock c starts step c+1 only once
//        the slowest live trainer has completed c - staleness (staleness 0 reads like bsp)
//
// The scheduler keeps the clocks and the membership (a trainer that stops sending heartbeats
// for `trainer_timeout` is dead; one that finished its data leaves); the servers combine bsp
// pushes. Read by the scheduler (gating, failure policy) and by trainers (flow of a step).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ember {

enum class SyncMode : uint8_t { kAsp = 0, kBsp = 1, kSsp = 2 };
enum class Combine : uint8_t { kMean = 0, kSum = 1 };
// What the others do when a trainer dies in a synchronised run.
enum class TrainerFailurePolicy : uint8_t {
  kContinue = 0,  // drop it from the membership; its share of later steps is no longer awaited
  kStop = 1,      // every waiting trainer fails with an error naming the dead one
};

struct SyncOptions {
  SyncMode mode = SyncMode::kAsp;
  uint32_t staleness = 0;         // ssp: clocks a trainer may run ahead of the slowest one
  Combine combine = Combine::kMean;  // bsp: how the trainers' gradients of a step are combined
  TrainerFailurePolicy on_trainer_failure = TrainerFailurePolicy::kStop;
  uint32_t trainers = 1;          // expected trainers: no clock is granted before they joined
  std::chrono::milliseconds trainer_timeout{5'000};  // silence after which a trainer is dead
  std::chrono::milliseconds clock_timeout{120'000};  // longest wait of a trainer for its clock

  bool synchronised() const { return mode != SyncMode::kAsp; }
  // The bound the scheduler enforces: 0 for bsp.
  uint32_t effective_staleness() const { return mode == SyncMode::kSsp ? staleness : 0; }
};

std::string_view SyncModeName(SyncMode mode);
Result<SyncMode> ParseSyncMode(std::string_view name);  // "asp", "bsp", "ssp"
Result<Combine> ParseCombine(std::string_view name);    // "mean", "sum"
Result<TrainerFailurePolicy> ParseTrainerFailurePolicy(std::string_view name);  // continue, stop

}  // namespace ember
