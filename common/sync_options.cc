// SyncOptions names.
#include "common/sync_options.h"

namespace ember {
namespace {

// The error for a name that is none of `choices`; built by appending, which also keeps GCC 12
// from a false -Wrestrict warning on "'" + std::string.
Status NotOneOf(std::string_view name, std::string_view choices) {
  std::string message = "'";
  message.append(name).append("' is not one of ").append(choices);
  return InvalidArgument(message);
}

}  // namespace

std::string_view SyncModeName(SyncMode mode) {
  switch (mode) {
    case SyncMode::kAsp: return "asp";
    case SyncMode::kBsp: return "bsp";
    case SyncMode::kSsp: return "ssp";
  }
  return "?";
}

Result<SyncMode> ParseSyncMode(std::string_view name) {
  if (name == "asp") return SyncMode::kAsp;
  if (name == "bsp") return SyncMode::kBsp;
  if (name == "ssp") return SyncMode::kSsp;
  return NotOneOf(name, "asp, bsp, ssp");
}

Result<Combine> ParseCombine(std::string_view name) {
  if (name == "mean") return Combine::kMean;
  if (name == "sum") return Combine::kSum;
  return NotOneOf(name, "mean, sum");
}

Result<TrainerFailurePolicy> ParseTrainerFailurePolicy(std::string_view name) {
  if (name == "continue") return TrainerFailurePolicy::kContinue;
  if (name == "stop") return TrainerFailurePolicy::kStop;
  return NotOneOf(name, "continue, stop");
}

}  // namespace ember
