// ServerLinks: a client's connections to the servers, as its I/O thread holds them: for each
// server of the routing table one DEALER socket, connected to the server's endpoint with its key,
// and a monitor of that socket's connection. ZeroMQ reconnects a lost connection by itself; what
// is sent meanwhile waits in the socket's queue.
//
// Thread-safety: the I/O thread alone calls it (a ZeroMQ socket stays on its thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/routing_table.h"
#include "common/status.h"
#include "common/transport.h"

namespace ember::ps {

class ServerLinks {
 public:
  // What happened to a server's connection.
  enum class Change { kLost, kBack };

  // `context` is borrowed: it outlives this object.
  explicit ServerLinks(Context& context) : context_(context) {}

  // Connects to each server of `routing` not connected as it says: a new server, or one with a
  // new endpoint or key (its old socket is closed, its monitor after it).
  Status Connect(const RoutingTable& routing);
  // Watches every server's socket and then its monitor, by server id: server s's socket is the
  // 2s-th socket added here, its monitor the next.
  void AddTo(Poller& poller);

  // The servers connected so far (ids 0 to size() - 1).
  size_t size() const { return links_.size(); }
  Socket& socket(uint32_t server) { return links_[server].socket; }
  const std::string& endpoint(uint32_t server) const { return links_[server].endpoint; }
  // Lost, not back yet.
  bool down(uint32_t server) const { return links_[server].down; }
  // The next change of `server`'s connection among the events waiting on its monitor, without
  // waiting: lost (it was up) or back (it was lost); nullopt when no more events wait.
  std::optional<Change> NextChange(uint32_t server);
  // "server 1 (tcp://..., connection lost)" or "servers 0 (...), 2 (...)", ascending, once each.
  std::string Name(std::vector<uint32_t> servers) const;

 private:
  struct Link {
    Socket monitor;  // the socket's connection events (MonitorLink); closed after it
    Socket socket;   // DEALER
    std::string endpoint;
    std::string public_key;  // the server's, as the routing table had it when connecting
    bool down = false;
  };

  Context& context_;
  std::vector<Link> links_;  // by server id
  uint64_t links_made_ = 0;  // names each link's monitor endpoint
};

}  // namespace ember::ps
