// Peer: who sent a request, as the transport authenticated it. Handlers decide what each kind of
// request needs (ps/server/shard_service.cc, scheduler/scheduler.cc); only the transport
// (common/transport.cc) knows how a peer proved who it is.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ember {

// The role a trusted public key was given in the cluster's config.
enum class PeerRole : uint8_t {
  kTrainer,    // pulls and pushes rows, reports clocks
  kServer,     // registers as a server, heartbeats, takes move orders, copies partitions
  kAdmin,      // may do anything: drain, checkpoint, restore, verify, and a trainer's requests
  kInsecure,   // authentication is off (loopback tests, --insecure): every role at once
};

inline std::string_view PeerRoleName(PeerRole role) {
  switch (role) {
    case PeerRole::kTrainer: return "trainer";
    case PeerRole::kServer: return "server";
    case PeerRole::kAdmin: return "admin";
    case PeerRole::kInsecure: return "insecure";
  }
  return "unknown";
}

struct Peer {
  PeerRole role = PeerRole::kInsecure;
  // The peer's CurveZMQ public key (Z85, 40 characters); empty when authentication is off.
  std::string public_key;

  // Whether this peer may act as `wanted` (admin may act as trainer; insecure as anything).
  bool Acts(PeerRole wanted) const {
    return role == wanted || role == PeerRole::kInsecure ||
           (role == PeerRole::kAdmin && wanted == PeerRole::kTrainer);
  }
  // "trainer key 'abcd1234...'" for errors and logs.
  std::string Describe() const {
    std::string text(PeerRoleName(role));
    if (!public_key.empty()) text += " key '" + public_key.substr(0, 8) + "...'";
    return text;
  }
};

}  // namespace ember
