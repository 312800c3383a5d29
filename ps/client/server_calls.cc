// Calls to one server outside the data plane: a connection for the call, one CallAndCheck.
#include "ps/client/server_calls.h"

#include "common/rpc_channel.h"
#include "common/transport.h"

namespace ember::ps {

Result<ServerStats> GetServerStats(const std::string& endpoint, Millis timeout) {
  Context context;
  RpcChannel channel(context, endpoint);
  return CallAndCheck<ServerStats>(
      channel, "stats of " + endpoint, timeout,
      [](const wire::RequestHeader& header) { return wire::EncodeStatsRequest(header); });
}

}  // namespace ember::ps
