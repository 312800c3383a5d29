// Status implementation.
#include "common/status.h"

namespace ember {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
  }
  return "UNKNOWN";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) state_ = std::make_shared<State>(State{code, std::move(message)});
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code(), std::string(context) + ": " + state_->message);
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code())) + ": " + state_->message;
}

}  // namespace ember
