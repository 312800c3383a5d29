// Client: the calls that go to every server at once (apply a clock, checkpoints, stats). The
// caller queues the call and waits; the I/O thread sends one request to each server on its
// connection and completes the call when every server answered, on the first error, or at the
// deadline. These requests are never sent again after a reconnection.
#include <algorithm>

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
  auto call = std::make_shared<ServerCall>();
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

// ---- I/O thread ----

void Client::Impl::StartServerCall(const std::shared_ptr<ServerCall>& call) {
  const RoutingTable& current = routing_;  // only this thread writes it
  call->bodies.resize(current.servers.size());
  active_server_calls_.push_back(call);
  for (const ServerInfo& server : current.servers) {
    const uint64_t id = next_request_id_++;
    Status sent = server.id < links_.size()
                      ? SendFrame(links_[server.id].socket, call->encode({id, current.epoch}))
                      : Unavailable("no connection");
    if (!sent.ok()) {
      FinishServerCall(call, sent.WithContext(call->what + " on " + server.endpoint));
      return;
    }
    ++call->outstanding;
    server_calls_in_flight_.emplace(id, ServerCallInFlight{call, server.id});
  }
  if (call->outstanding == 0) FinishServerCall(call, Status::Ok());
}

void Client::Impl::OnServerCallReply(ServerCallInFlight entry, wire::DecodedResponse response) {
  const std::shared_ptr<ServerCall>& call = entry.call;
  --call->outstanding;
  if (!response.status.ok()) {
    FinishServerCall(
        call, response.status.WithContext(call->what + " on " + links_[entry.server].endpoint));
    return;
  }
  call->bodies[entry.server] = std::move(response.body);
  if (call->outstanding == 0) FinishServerCall(call, Status::Ok());
}

void Client::Impl::FinishServerCall(const std::shared_ptr<ServerCall>& call, Status status) {
  if (call->finished) return;
  call->finished = true;
  std::erase_if(server_calls_in_flight_,
                [&](const auto& entry) { return entry.second.call == call; });
  std::erase(active_server_calls_, call);
  call->ticket.Complete(std::move(status));
}

void Client::Impl::ExpireServerCalls() {
  const auto now = Clock::now();
  std::vector<std::shared_ptr<ServerCall>> expired;
  for (const auto& call : active_server_calls_) {
    if (now >= call->deadline) expired.push_back(call);
  }
  for (const auto& call : expired) {
    std::vector<uint32_t> silent;
    for (const auto& [id, entry] : server_calls_in_flight_) {
      if (entry.call == call) silent.push_back(entry.server);
    }
    FinishServerCall(call, DeadlineExceeded(call->what + ": no reply within " +
                                            std::to_string(call->timeout.count()) + " ms from " +
                                            NameServers(std::move(silent))));
  }
}

}  // namespace ember::ps
