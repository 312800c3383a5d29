// Status and Result<T>: how every expected failure in ember is reported.
//
// A Status is a code plus a message. Codes tell the caller what to do next:
//   kUnavailable        retry the same call (peer down, timeout on a transport)
//   kFailedPrecondition not until state changes (e.g. a stale routing epoch)
//   kInvalidArgument    the request itself is wrong; retrying will not help
//   kNotFound, kDeadlineExceeded, kResourceExhausted, kAborted, kDataLoss, kInternal
// Status is cheap on success (no allocation). Result<T> holds either a value or a non-OK Status.
// Both are [[nodiscard]]; use RETURN_IF_ERROR / ASSIGN_OR_RETURN to pass errors up with context.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/check.h"

namespace ember {

// Values match the wire enum StatusCode in common/ember.capnp; never renumber.
enum class StatusCode : uint16_t {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kFailedPrecondition = 3,
  kUnavailable = 4,
  kAborted = 5,
  kResourceExhausted = 6,
  kDeadlineExceeded = 7,
  kDataLoss = 8,
  kInternal = 9,
  kPermissionDenied = 10,  // the peer's role may not send this request
  kLastCode = kPermissionDenied,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);

  static Status Ok() { return Status(); }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  std::string_view message() const { return state_ ? std::string_view(state_->message) : ""; }

  // Returns a copy whose message is "context: message"; OK stays OK.
  Status WithContext(std::string_view context) const;
  // "OK" or "CODE_NAME: message".
  std::string ToString() const;

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const State> state_;  // null when OK
};

inline Status InvalidArgument(std::string msg) {
  return Status(StatusCode::kInvalidArgument, std::move(msg));
}
inline Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
inline Status FailedPrecondition(std::string msg) {
  return Status(StatusCode::kFailedPrecondition, std::move(msg));
}
inline Status Unavailable(std::string msg) {
  return Status(StatusCode::kUnavailable, std::move(msg));
}
inline Status Aborted(std::string msg) { return Status(StatusCode::kAborted, std::move(msg)); }
inline Status ResourceExhausted(std::string msg) {
  return Status(StatusCode::kResourceExhausted, std::move(msg));
}
inline Status DeadlineExceeded(std::string msg) {
  return Status(StatusCode::kDeadlineExceeded, std::move(msg));
}
inline Status DataLoss(std::string msg) { return Status(StatusCode::kDataLoss, std::move(msg)); }
inline Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }
inline Status PermissionDenied(std::string msg) {
  return Status(StatusCode::kPermissionDenied, std::move(msg));
}

// Either a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    EMBER_CHECK(!status_.ok(), "Result constructed from an OK status without a value");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & {
    EMBER_CHECK(ok(), status_.ToString());
    return *value_;
  }
  const T& value() const& {
    EMBER_CHECK(ok(), status_.ToString());
    return *value_;
  }
  T&& value() && {
    EMBER_CHECK(ok(), status_.ToString());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace ember

#define EMBER_STATUS_CONCAT_INNER(a, b) a##b
#define EMBER_STATUS_CONCAT(a, b) EMBER_STATUS_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if it is not OK.
#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    ::ember::Status ember_status_ = (expr);          \
    if (!ember_status_.ok()) return ember_status_;   \
  } while (0)

// Same, prefixing the message with `context` (a std::string_view-convertible expression).
#define RETURN_IF_ERROR_CTX(expr, context)                                    \
  do {                                                                        \
    ::ember::Status ember_status_ = (expr);                                   \
    if (!ember_status_.ok()) return ember_status_.WithContext(context);       \
  } while (0)

// ASSIGN_OR_RETURN(auto x, MakeX()); declares x from the Result's value or returns its status.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(EMBER_STATUS_CONCAT(ember_result_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()
