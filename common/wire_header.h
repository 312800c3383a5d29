// What every ember message starts with: the protocol version and the request header.
//
// Part of the wire codec (common/wire.h); the topic headers (common/wire_*.h) declare their
// encoders with it.
#pragma once

#include <cstdint>

#include "common/frame.h"
#include "common/peer.h"

namespace ember::wire {

constexpr uint32_t kProtocolVersion = 1;  // == protocolVersion in ember.capnp

using ember::kMaxFrameBytes;
// Each request struct names who may send it: `static constexpr PeerRoles kSenders`.
using ember::kAdmins;
using ember::kAnyRole;
using ember::kServers;
using ember::kTrainers;
using ember::PeerRoles;

struct RequestHeader {
  uint64_t request_id = 0;
  uint64_t epoch = 0;  // routing epoch the sender used
};

}  // namespace ember::wire
