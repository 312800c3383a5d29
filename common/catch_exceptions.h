// CatchExceptions: the barrier a request loop puts around handling one request.
//
// Nothing a peer sends may end a process, but code below the loop (a library adapter, an
// allocation) can still throw. A loop runs each request through CatchExceptions, and answers an
// exception that escaped with the Internal error it returns instead of letting it end the thread.
#pragma once

#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include "common/status.h"

namespace ember {

// Returns fn()'s value (a Result of it; a Status for a void fn), or Internal carrying the
// exception's message when fn throws anything (the caller adds what it was doing:
// Status::WithContext).
template <typename Fn>
auto CatchExceptions(Fn&& fn) {
  using Value = std::invoke_result_t<Fn>;
  using Out = std::conditional_t<std::is_void_v<Value>, Status, Result<Value>>;
  std::string error;
  try {
    if constexpr (std::is_void_v<Value>) {
      std::forward<Fn>(fn)();
      return Out(Status::Ok());
    } else {
      return Out(std::forward<Fn>(fn)());
    }
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    error = "an exception that is not a std::exception";
  }
  return Out(Internal("unexpected exception: " + error));
}

}  // namespace ember
