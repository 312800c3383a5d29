// Private to ps/client: the one way the client side calls the scheduler or a single server over
// an RpcChannel and checks the answer. SchedulerClient and GetServerStats use it; the data plane
// and the calls to every server go through the Client's I/O thread instead.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "common/rpc_channel.h"
#include "common/status.h"
#include "common/wire.h"

namespace ember::ps::internal {

// Sends encode({fresh request id, epoch}) on `channel`, waits up to `timeout` for the reply and
// returns its body of type `Body` (wire::NoPayload for calls answered by a status alone). Every
// error names the call (`what`): the transport's (Unavailable, DeadlineExceeded), the peer's own
// status with its code, or Internal when the reply lacks the expected body.
template <typename Body, typename Encode>
Result<Body> CallAndCheck(RpcChannel& channel, std::string_view what, Millis timeout,
                          Encode&& encode, uint64_t epoch = 0) {
  const uint64_t id = channel.NextRequestId();
  auto reply =
      channel.Call(id, std::forward<Encode>(encode)(wire::RequestHeader{id, epoch}), timeout);
  if (!reply.ok()) return reply.status().WithContext(what);
  if (!reply->status.ok()) return reply->status.WithContext(what);
  if constexpr (std::is_same_v<Body, wire::NoPayload>) {
    return Body{};
  } else {
    auto* body = std::get_if<Body>(&reply->body);
    if (body == nullptr) {
      return Internal(std::string(what) + ": " + channel.endpoint() +
                      " answered without the expected payload");
    }
    return std::move(*body);
  }
}

}  // namespace ember::ps::internal
