// Client: the calls that go to every server at once (apply a clock, checkpoints, stats). The
// caller queues the call and waits; the I/O thread runs it (every_server_calls.h).
#include "ps/client/client_internal.h"

namespace ember::ps {

Status Client::ApplyClock(uint64_t clock, std::span<const uint32_t> trainers, Combine combine,
                          Millis timeout, const std::string& signature) {
  wire::ApplyClockRequest apply{clock, {trainers.begin(), trainers.end()}, combine, signature};
  return impl_
      ->CallEveryServer(
          [apply = std::move(apply)](const wire::RequestHeader& header) {
            return wire::EncodeApplyClock(header, apply);
          },
          "applying clock " + std::to_string(clock), timeout)
      .status();
}

Status Client::Checkpoint(const std::string& dir, CheckpointAction action, Millis timeout,
                          const CutWrite& write) {
  return impl_
      ->CallEveryServer(
          [checkpoint = wire::CheckpointRequest{dir, action, write.cut, write.previous_cut,
                                                write.track}](const wire::RequestHeader& header) {
            return wire::EncodeCheckpoint(header, checkpoint);
          },
          "checkpoint '" + dir + "'", timeout)
      .status();
}

Result<std::vector<ServerStats>> Client::Stats(Millis timeout) {
  ASSIGN_OR_RETURN(
      std::vector<wire::ResponseBody> bodies,
      impl_->CallEveryServer(
          [](const wire::RequestHeader& header) { return wire::EncodeStatsRequest(header); },
          "stats", timeout));
  std::vector<ServerStats> all;
  for (wire::ResponseBody& body : bodies) {
    auto* stats = std::get_if<ServerStats>(&body);
    if (stats == nullptr) {
      return Internal("stats reply without payload from server " + std::to_string(all.size()));
    }
    all.push_back(std::move(*stats));
  }
  return all;
}

Result<std::vector<wire::ResponseBody>> Client::Impl::CallEveryServer(
    std::function<Frame(const wire::RequestHeader&)> encode, std::string what, Millis timeout) {
  auto call = std::make_shared<EveryServerCalls::Call>();
  call->encode = std::move(encode);
  call->what = std::move(what);
  call->timeout = timeout;
  call->deadline = Clock::now() + timeout;
  {
    std::lock_guard lock(submit_mutex_);
    if (stopping_.load()) return Aborted("client closed");
    call_submissions_.push_back(call);
    (void)SendFrame(wake_sender_, Frame());  // else found on the I/O thread's idle timeout
  }
  RETURN_IF_ERROR(call->ticket.Wait());
  // Completed: the I/O thread does not touch the call any more.
  return std::move(call->bodies);
}

}  // namespace ember::ps
