// Ticket implementation.
#include "ps/client/ticket.h"

namespace ember::ps {

Ticket Ticket::Done(Status status) {
  Ticket ticket = Pending();
  ticket.Complete(std::move(status));
  return ticket;
}

Ticket Ticket::Pending() {
  Ticket ticket;
  ticket.state_ = std::make_shared<State>();
  return ticket;
}

Status Ticket::Wait() const {
  if (!state_) return Status::Ok();
  std::unique_lock lock(state_->mutex);
  state_->done_cv.wait(lock, [&] { return state_->done; });
  return state_->status;
}

bool Ticket::WaitFor(Millis timeout) const {
  if (!state_) return true;
  std::unique_lock lock(state_->mutex);
  return state_->done_cv.wait_for(lock, timeout, [&] { return state_->done; });
}

bool Ticket::ready() const {
  if (!state_) return true;
  std::lock_guard lock(state_->mutex);
  return state_->done;
}

void Ticket::Complete(Status status) const {
  if (!state_) return;
  {
    std::lock_guard lock(state_->mutex);
    if (state_->done) return;
    state_->done = true;
    state_->status = std::move(status);
  }
  state_->done_cv.notify_all();
}

}  // namespace ember::ps
