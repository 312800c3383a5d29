// ServerLinks: a client's connections to the servers, on its I/O thread.
#include "ps/client/server_links.h"

#include <algorithm>

namespace ember::ps {

Status ServerLinks::Connect(const RoutingTable& routing) {
  for (const ServerInfo& server : routing.servers) {
    if (server.id < links_.size() && links_[server.id].endpoint == server.endpoint &&
        links_[server.id].public_key == server.public_key) {
      continue;
    }
    if (server.id >= links_.size()) links_.resize(server.id + 1);
    Link& link = links_[server.id];
    // The monitor of an old socket is closed after it.
    Link fresh;
    ASSIGN_OR_RETURN(fresh.socket, MakeSocket(context_, SocketKind::kDealer));
    ASSIGN_OR_RETURN(fresh.monitor,
                     MonitorLink(context_, fresh.socket,
                                 "inproc://ember-client-link-" + std::to_string(links_made_++)));
    RETURN_IF_ERROR(ConnectSocket(fresh.socket, server.endpoint, server.public_key));
    fresh.endpoint = server.endpoint;
    fresh.public_key = server.public_key;
    link.socket.Close();
    link = std::move(fresh);
  }
  return Status::Ok();
}

void ServerLinks::AddTo(Poller& poller) {
  for (Link& link : links_) {
    poller.Add(link.socket);
    poller.Add(link.monitor);
  }
}

std::optional<ServerLinks::Change> ServerLinks::NextChange(uint32_t server) {
  Link& link = links_[server];
  for (;;) {
    auto event = ReceiveLinkEvent(link.monitor);
    if (!event.ok()) return std::nullopt;  // none left
    if (*event == LinkEvent::kDown && !link.down) {
      link.down = true;
      return Change::kLost;
    }
    if (*event == LinkEvent::kUp && link.down) {
      link.down = false;
      return Change::kBack;
    }
  }
}

std::string ServerLinks::Name(std::vector<uint32_t> servers) const {
  std::sort(servers.begin(), servers.end());
  servers.erase(std::unique(servers.begin(), servers.end()), servers.end());
  std::string names = servers.size() == 1 ? "server " : "servers ";
  for (size_t i = 0; i < servers.size(); ++i) {
    const Link& link = links_[servers[i]];
    names += (i == 0 ? "" : ", ") + std::to_string(servers[i]) + " (" + link.endpoint +
             (link.down ? ", connection lost" : "") + ")";
  }
  return names;
}

}  // namespace ember::ps
