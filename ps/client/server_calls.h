// Calls to one server outside the data plane, for tools that do not register as a trainer
// (`ember status`). A trainer's calls to its servers go through ps::Client.
//
// Thread-safety: the functions may run on any thread at once.
#pragma once

#include <string>

#include "common/millis.h"
#include "common/routing_table.h"
#include "common/server_stats.h"
#include "common/status.h"
#include "common/transport_security.h"

namespace ember::ps {

// The counters and table sizes of `server` (its endpoint and key, from the routing table or the
// cluster status), asked with `security`. Unavailable or DeadlineExceeded when it cannot be
// reached or does not answer within `timeout`; errors name the endpoint.
Result<ServerStats> GetServerStats(const ServerInfo& server, const TransportSecurity& security,
                                   Millis timeout);

}  // namespace ember::ps
