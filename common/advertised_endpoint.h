// The endpoint a process tells its peers to connect to, which need not be the one it binds: a
// server bound to every interface (tcp://0.0.0.0:*, tcp://*:*) must advertise a name or address
// the others can reach (--advertise HOST[:PORT]). Host names are fine: ZeroMQ resolves them when
// a peer connects.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace ember {

// The endpoint to advertise for a socket bound at `bound` (tcp://HOST:PORT as ZeroMQ reports it):
//   - `advertise` empty: `bound` itself, or the machine's host name in place of a wildcard host
//     (0.0.0.0, *, ::);
//   - HOST or tcp://HOST: that host with the bound port;
//   - HOST:PORT (a bracketed IPv6 address takes a port after the bracket): exactly that, for a
//     port forwarded to this one.
// InvalidArgument naming the value for a malformed HOST[:PORT] or a non-tcp `bound` endpoint.
Result<std::string> AdvertisedEndpoint(std::string_view bound, std::string_view advertise);

}  // namespace ember
