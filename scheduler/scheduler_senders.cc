// Scheduler: which authenticated connection may speak for which member. A server's heartbeats
// and move decisions come from the key it registered with; a trainer's clocks, heartbeats and cut
// arrivals from the key that registered it; a trainer name that is a trusted key's name is
// registered only by that key. Without authentication nothing is bound.
#include "common/quote_for_error.h"
#include "scheduler/scheduler.h"

namespace ember::scheduler {
namespace {

Status Refused(std::string_view kind, const std::string& member, const Peer& peer) {
  return PermissionDenied("a '" + std::string(kind) + "' request for " + member + " from " +
                          peer.Describe() + ", which did not register it; refused, nothing "
                          "changed");
}

}  // namespace

bool Scheduler::IsServerKey(uint32_t server, const Peer& peer) const {
  return server < servers_.size() && servers_[server].public_key == peer.public_key;
}

Status Scheduler::CheckMember(const wire::RequestBody& body, const Peer& peer) const {
  if (!peer.authenticated()) return Status::Ok();
  const std::string_view kind = wire::RequestKindName(body);
  // Ids nobody registered are left to the handlers, which refuse them by name.
  auto check_server = [&](uint32_t server) {
    if (server >= servers_.size() || IsServerKey(server, peer)) return Status::Ok();
    return Refused(kind, "server " + std::to_string(server), peer);
  };
  auto check_trainer = [&](uint32_t trainer) {
    auto bound = trainer_keys_.find(trainer);
    if (bound == trainer_keys_.end() || bound->second == peer.public_key) return Status::Ok();
    return Refused(kind, "trainer " + std::to_string(trainer), peer);
  };
  if (auto* beat = std::get_if<wire::ServerHeartbeatRequest>(&body)) {
    return check_server(beat->server);
  }
  if (auto* decision = std::get_if<wire::MoveDecisionRequest>(&body)) {
    // The target commits or aborts its move; the source may abort one that stalled.
    const wire::MoveOrder& move = decision->move;
    if (IsServerKey(move.to, peer) || (!decision->commit && IsServerKey(move.from, peer))) {
      return Status::Ok();
    }
    return PermissionDenied("a move-decision (" + std::string(decision->commit ? "commit" : "abort") +
                            ") of partition " + std::to_string(move.partition) + " from " +
                            peer.Describe() + ", which is not the move's " +
                            (decision->commit ? "target" : "target or source") +
                            "; refused, nothing changed");
  }
  if (auto* clock = std::get_if<wire::TrainerClockRequest>(&body)) {
    return check_trainer(clock->trainer);
  }
  if (auto* heartbeat = std::get_if<wire::HeartbeatRequest>(&body)) {
    return check_trainer(heartbeat->trainer);
  }
  if (auto* cut = std::get_if<wire::CheckpointCutRequest>(&body)) return check_trainer(cut->trainer);
  if (auto* trainer = std::get_if<wire::RegisterTrainerRequest>(&body)) {
    // The name of a trusted key is that key's: no other trainer key can take it first (an
    // admin key may act as any trainer: `ember train --restore` runs rank 0 with one).
    for (const TrustedKey& trusted : options_.security.trusted) {
      if (peer.role == PeerRole::kAdmin) break;
      if (trusted.name != trainer->name || trusted.public_key == peer.public_key) continue;
      return PermissionDenied("registration of trainer " + QuoteForError(trainer->name) +
                              " from " + peer.Describe() + ": the name is that of another "
                              "trusted key, and reserved for it; refused, nothing changed");
    }
    auto id = trainer_ids_.find(trainer->name);
    if (id != trainer_ids_.end()) return check_trainer(id->second);
  }
  return Status::Ok();
}

}  // namespace ember::scheduler
