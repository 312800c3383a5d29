// Ticket: the future of one asynchronous client operation (a batched pull or push).
//
// The client completes it exactly once, from its I/O thread; any number of threads may wait.
// A default-constructed ticket is already complete with OK.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>

#include "common/millis.h"
#include "common/status.h"

namespace ember::ps {

class Ticket {
 public:
  Ticket() = default;
  // A ticket that is already complete with `status`.
  static Ticket Done(Status status);
  // A pending ticket; Complete() finishes it.
  static Ticket Pending();

  // Blocks until the operation finished; its status.
  Status Wait() const;
  // Blocks until the operation finished or `timeout` passed; whether it finished.
  bool WaitFor(Millis timeout) const;
  bool ready() const;
  void Complete(Status status) const;

 private:
  struct State {
    mutable std::mutex mutex;
    mutable std::condition_variable done_cv;
    bool done = false;
    Status status;
  };
  std::shared_ptr<State> state_;
};

}  // namespace ember::ps
