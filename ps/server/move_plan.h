// MovePlan: a source server's copy of what the scheduler decided about its partitions, as the
// answer to its last heartbeat said: the moves out of this server in flight and planned
// (partition -> target server) and of the routing table, the servers' public keys and the epoch.
//
// A server copies, hands over or releases a partition only as this plan says (ShardService's
// partition transfers): the move must be in flight out of it, towards the server that asks, and
// with authentication the asking connection must hold the key the routing table lists for that
// server. So a valid server key can move nothing the scheduler did not plan, and no server can
// speak for another. The scheduler names a move to its source before its target learns it
// (scheduler/shard_moves.h), so an honest target finds it here.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/peer.h"
#include "common/routing_table.h"
#include "common/status.h"
#include "common/wire.h"

namespace ember::ps {

class MovePlan {
 public:
  explicit MovePlan(uint32_t server_id) : server_id_(server_id) {}

  // The scheduler's answer to a heartbeat: its routing table and the moves out of this server,
  // in flight and planned. Moves naming another source are ignored.
  void Update(const RoutingTable& routing, std::span<const wire::MoveOrder> in_flight,
              std::span<const wire::MoveOrder> planned);

  // The target of partition p's move out, if one is in flight or planned.
  std::optional<uint32_t> TargetOf(uint32_t p) const;
  // The target of partition p's move out, if one is in flight.
  std::optional<uint32_t> InFlightTargetOf(uint32_t p) const;
  // Epoch of the routing table last heard (0: none).
  uint64_t epoch() const;

  // OK when `peer` may act as server `server`: authenticated with the key the routing table
  // lists for it, or any peer when authentication is off. PermissionDenied otherwise, naming
  // both.
  Status CheckIsServer(uint32_t server, const Peer& peer) const;

 private:
  const uint32_t server_id_;
  mutable std::mutex mutex_;
  uint64_t epoch_ = 0;                    // guarded by mutex_
  std::vector<std::string> server_keys_;  // by server id; guarded by mutex_
  // partition -> target; guarded by mutex_
  std::map<uint32_t, uint32_t> in_flight_;
  std::map<uint32_t, uint32_t> planned_;
};

}  // namespace ember::ps
