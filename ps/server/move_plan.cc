// MovePlan implementation.
#include "ps/server/move_plan.h"

namespace ember::ps {

namespace {

std::optional<uint32_t> Find(const std::map<uint32_t, uint32_t>& targets, uint32_t p) {
  auto it = targets.find(p);
  if (it == targets.end()) return std::nullopt;
  return it->second;
}

}  // namespace

void MovePlan::Update(const RoutingTable& routing, std::span<const wire::MoveOrder> in_flight,
                      std::span<const wire::MoveOrder> planned) {
  std::lock_guard lock(mutex_);
  if (routing.epoch < epoch_) return;  // an answer older than one applied already
  epoch_ = routing.epoch;
  server_keys_.clear();
  for (const ServerInfo& server : routing.servers) server_keys_.push_back(server.public_key);
  for (auto [moves, targets] : {std::pair{in_flight, &in_flight_}, std::pair{planned, &planned_}}) {
    targets->clear();
    for (const wire::MoveOrder& move : moves) {
      if (move.from == server_id_ && move.to != server_id_) (*targets)[move.partition] = move.to;
    }
  }
}

std::optional<uint32_t> MovePlan::TargetOf(uint32_t p) const {
  std::lock_guard lock(mutex_);
  if (auto target = Find(in_flight_, p)) return target;
  return Find(planned_, p);
}

std::optional<uint32_t> MovePlan::InFlightTargetOf(uint32_t p) const {
  std::lock_guard lock(mutex_);
  return Find(in_flight_, p);
}

uint64_t MovePlan::epoch() const {
  std::lock_guard lock(mutex_);
  return epoch_;
}

Status MovePlan::CheckIsServer(uint32_t server, const Peer& peer) const {
  if (!peer.authenticated()) return Status::Ok();
  std::lock_guard lock(mutex_);
  if (peer.role == PeerRole::kServer && server < server_keys_.size() &&
      !server_keys_[server].empty() && server_keys_[server] == peer.public_key) {
    return Status::Ok();
  }
  return PermissionDenied(peer.Describe() + " is not server " + std::to_string(server) +
                          (server < server_keys_.size() ? "" : " (no such server in the routing "
                                                               "table this server last heard)"));
}

}  // namespace ember::ps
