// EveryServerCalls: a client's calls to every server at once, on its I/O thread.
#include "ps/client/every_server_calls.h"

#include <algorithm>

namespace ember::ps {

void EveryServerCalls::Start(const std::shared_ptr<Call>& call, const RoutingTable& routing,
                             uint64_t& next_request_id, const Send& send) {
  call->bodies.resize(routing.servers.size());
  active_.push_back(call);
  // A server that owns no partition holds nothing to apply or write (a bsp source hands a
  // partition over only once it applied its pushes), and one drained has exited: not asked.
  std::vector<uint32_t> owned(routing.servers.size(), 0);
  for (uint32_t owner : routing.owners) {
    if (owner < owned.size()) ++owned[owner];
  }
  for (const ServerInfo& server : routing.servers) {
    if (!routing.owners.empty() && owned[server.id] == 0) continue;
    const uint64_t id = next_request_id++;
    Status sent = send(server.id, call->encode({id, routing.epoch}));
    if (!sent.ok()) {
      Finish(call, sent.WithContext(call->what + " on " + server.endpoint));
      return;
    }
    ++call->outstanding;
    in_flight_.emplace(id, InFlight{call, server.id});
  }
  if (call->outstanding == 0) Finish(call, Status::Ok());
}

bool EveryServerCalls::OnReply(uint64_t request_id, wire::DecodedResponse& response,
                               const EndpointOf& endpoint) {
  auto it = in_flight_.find(request_id);
  if (it == in_flight_.end()) return false;
  const InFlight entry = std::move(it->second);
  in_flight_.erase(it);
  const std::shared_ptr<Call>& call = entry.call;
  --call->outstanding;
  if (!response.status.ok()) {
    Finish(call, response.status.WithContext(call->what + " on " + endpoint(entry.server)));
    return true;
  }
  call->bodies[entry.server] = std::move(response.body);
  if (call->outstanding == 0) Finish(call, Status::Ok());
  return true;
}

void EveryServerCalls::OnServerLeft(uint32_t server) {
  std::vector<std::shared_ptr<Call>> answered;
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (it->second.server != server) {
      ++it;
      continue;
    }
    if (--it->second.call->outstanding == 0) answered.push_back(it->second.call);
    it = in_flight_.erase(it);
  }
  for (const auto& call : answered) Finish(call, Status::Ok());
}

void EveryServerCalls::Finish(const std::shared_ptr<Call>& call, Status status) {
  if (call->finished) return;
  call->finished = true;
  std::erase_if(in_flight_, [&](const auto& entry) { return entry.second.call == call; });
  std::erase(active_, call);
  call->ticket.Complete(std::move(status));
}

void EveryServerCalls::ExpireDeadlines(const NameServers& name_servers) {
  const auto now = Clock::now();
  std::vector<std::shared_ptr<Call>> expired;
  for (const auto& call : active_) {
    if (now >= call->deadline) expired.push_back(call);
  }
  for (const auto& call : expired) {
    std::vector<uint32_t> silent;
    for (const auto& [id, entry] : in_flight_) {
      if (entry.call == call) silent.push_back(entry.server);
    }
    Finish(call, DeadlineExceeded(call->what + ": no reply within " +
                                  std::to_string(call->timeout.count()) + " ms from " +
                                  name_servers(std::move(silent))));
  }
}

void EveryServerCalls::AbortAll(const Status& status) {
  for (const auto& call : std::vector<std::shared_ptr<Call>>(active_)) Finish(call, status);
}

}  // namespace ember::ps
