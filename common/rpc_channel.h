// RpcChannel: a synchronous request/response channel to one peer over a DEALER socket, and
// CallAndCheck, the one way ember makes such a call and checks its answer.
//
// Replies whose request id does not match the outstanding call (late replies to calls that
// timed out) are discarded. One thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "common/frame.h"
#include "common/status.h"
#include "common/transport.h"
#include "common/wire.h"

namespace ember {

class RpcChannel {
 public:
  // `context` is borrowed and must outlive the channel. `server_key` is the peer's public key,
  // needed when the context authenticates (common/transport.h).
  RpcChannel(Context& context, std::string endpoint, std::string server_key = "");

  const std::string& endpoint() const { return endpoint_; }
  uint64_t NextRequestId() { return next_request_id_++; }
  // Heartbeats on the connection (SetHeartbeats, 1 s, dropped after 3 s of silence), so that a
  // peer gone without closing it (a restarted scheduler's old container) is connected to anew.
  // For peers answering small messages; call before the first Call.
  void EnableHeartbeats() { heartbeats_ = true; }

  // Sends `request` (encoded with header.request_id == the id passed) and waits for its reply.
  // Transport failures give Unavailable/DeadlineExceeded; a remote error comes back as the
  // response's status.
  Result<wire::DecodedResponse> Call(uint64_t request_id, Frame request, Millis timeout);

 private:
  Status EnsureConnected();

  Context& context_;
  std::string endpoint_;
  std::string server_key_;
  Socket socket_;
  bool connected_ = false;
  bool heartbeats_ = false;
  uint64_t next_request_id_ = 1;
};

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

}  // namespace ember
