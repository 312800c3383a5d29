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
  kReader,     // serving: looks rows up, reads the routing table and status; changes nothing
  kInsecure,   // authentication is off (loopback tests, --insecure): every role at once
  // Authentication is on, but the message carries no authenticated identity: it may send
  // nothing (a keyed process has no insecure peer).
  kUnauthenticated,
};

inline std::string_view PeerRoleName(PeerRole role) {
  switch (role) {
    case PeerRole::kTrainer: return "trainer";
    case PeerRole::kServer: return "server";
    case PeerRole::kAdmin: return "admin";
    case PeerRole::kReader: return "reader";
    case PeerRole::kInsecure: return "insecure";
    case PeerRole::kUnauthenticated: return "unauthenticated";
  }
  return "unknown";
}

// A set of roles: who may send a request kind (each request struct of common/wire_*.h names
// its own, as kSenders).
using PeerRoles = uint8_t;
constexpr PeerRoles RoleBit(PeerRole role) { return PeerRoles(1u << static_cast<int>(role)); }
inline constexpr PeerRoles kTrainers = RoleBit(PeerRole::kTrainer);
inline constexpr PeerRoles kServers = RoleBit(PeerRole::kServer);
inline constexpr PeerRoles kAdmins = RoleBit(PeerRole::kAdmin);
inline constexpr PeerRoles kReaders = RoleBit(PeerRole::kReader);
inline constexpr PeerRoles kAnyRole = kTrainers | kServers | kAdmins | kReaders;
// The roles a key may be given in a config, in the order errors list them.
inline constexpr PeerRole kKeyRoles[] = {PeerRole::kTrainer, PeerRole::kServer, PeerRole::kAdmin,
                                         PeerRole::kReader};

// "trainer or admin", for errors.
inline std::string DescribeRoles(PeerRoles roles) {
  std::string text;
  for (PeerRole role : kKeyRoles) {
    if ((roles & RoleBit(role)) == 0) continue;
    if (!text.empty()) text += " or ";
    text += PeerRoleName(role);
  }
  return text;
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
  // Whether this peer may send a request that `senders` may send.
  bool MaySend(PeerRoles senders) const {
    return role == PeerRole::kInsecure || (senders & RoleBit(role)) != 0 ||
           (role == PeerRole::kAdmin && (senders & kTrainers) != 0);
  }
  // Whether this process checks who its peers are (authentication on): then the peer is bound to
  // its key, which an unauthenticated one lacks (it may send nothing).
  bool authenticated() const { return role != PeerRole::kInsecure; }
  // "trainer key 'abcd1234...'" for errors and logs.
  std::string Describe() const {
    std::string text(PeerRoleName(role));
    if (!public_key.empty()) text += " key '" + public_key.substr(0, 8) + "...'";
    return text;
  }
};

}  // namespace ember
