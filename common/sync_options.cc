// SyncOptions names.
#include "common/sync_options.h"

namespace ember {

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
  return InvalidArgument("'" + std::string(name) + "' is not one of asp, bsp, ssp");
}

Result<Combine> ParseCombine(std::string_view name) {
  if (name == "mean") return Combine::kMean;
  if (name == "sum") return Combine::kSum;
  return InvalidArgument("'" + std::string(name) + "' is not one of mean, sum");
}

Result<TrainerFailurePolicy> ParseTrainerFailurePolicy(std::string_view name) {
  if (name == "continue") return TrainerFailurePolicy::kContinue;
  if (name == "stop") return TrainerFailurePolicy::kStop;
  return InvalidArgument("'" + std::string(name) + "' is not one of continue, stop");
}

}  // namespace ember
