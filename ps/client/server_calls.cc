// Calls to one server outside the data plane: a connection for the call, one CallAndCheck.
#include "ps/client/server_calls.h"

#include "common/rpc_channel.h"
#include "common/transport.h"

namespace ember::ps {

Result<ServerStats> GetServerStats(const ServerInfo& server, const TransportSecurity& security,
                                   Millis timeout) {
  const std::string& endpoint = server.endpoint;
  Context context(1, security);
  RpcChannel channel(context, endpoint, server.public_key);
  return CallAndCheck<ServerStats>(
      channel, "stats of " + endpoint, timeout,
      [](const wire::RequestHeader& header) { return wire::EncodeStatsRequest(header); });
}

}  // namespace ember::ps
