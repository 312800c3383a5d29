// ReplicaService: what a serving replica answers, independent of sockets.
//
// A replica looks to its clients like a one-server cluster whose scheduler is the replica itself:
// a read-only client (ps::Client with read_only, `ember lookup`, Python's read_only Client)
// pointed at it registers as a reader (answered with the training cluster's tables and a routing
// table giving every partition to the replica), then sends its lookups there. It answers
// register-reader, get-routing, cluster-status, lookup, stats and ping; anything else (a pull, a
// push, a trainer's registration) is refused by name. Lookups are refused (Unavailable) until the
// replica holds a whole copy: loaded from its data directory or a checkpoint, or streamed.
//
// Thread-safety: Handle may be called from many threads.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "common/peer.h"
#include "common/routing_table.h"
#include "common/status.h"
#include "common/wire.h"
#include "ps/replica/replica_store.h"

namespace ember::ps {

class ReplicaService {
 public:
  // `store` is borrowed. `endpoint` and `public_key` are what clients connect to; `ready` says
  // whether the store holds a whole copy yet.
  ReplicaService(ReplicaStore& store, const std::string& endpoint, const std::string& public_key,
                 std::function<bool()> ready, uint32_t keys_per_message);

  // Decodes one request frame from `peer` and returns the response frame; never fails.
  Frame Handle(Frame request, const Peer& peer);

  // The routing table clients get: every partition on the replica (server 0).
  const RoutingTable& routing() const { return routing_; }
  uint64_t lookups() const { return lookups_.load(std::memory_order_relaxed); }

 private:
  Frame HandleDecoded(const wire::DecodedRequest& request, const Peer& peer);
  Frame HandleLookup(uint64_t request_id, const wire::LookupRequest& lookup);
  Frame Error(uint64_t request_id, const Status& status) const;

  ReplicaStore& store_;
  RoutingTable routing_;
  const std::function<bool()> ready_;
  const uint32_t keys_per_message_;
  std::atomic<uint64_t> lookups_{0};
  std::atomic<uint64_t> errors_{0};
};

}  // namespace ember::ps
