// RpcChannel implementation: send, then wait for the reply with the same request id.
#include "common/rpc_channel.h"

#include <vector>

namespace ember {
namespace {

constexpr Millis kHeartbeatInterval{1000};
constexpr Millis kHeartbeatTimeout{3000};

}  // namespace

RpcChannel::RpcChannel(Context& context, std::string endpoint, std::string server_key)
    : context_(context), endpoint_(std::move(endpoint)), server_key_(std::move(server_key)) {}

Status RpcChannel::EnsureConnected() {
  if (connected_) return Status::Ok();
  ASSIGN_OR_RETURN(socket_, MakeSocket(context_, SocketKind::kDealer));
  if (heartbeats_) RETURN_IF_ERROR(SetHeartbeats(socket_, kHeartbeatInterval, kHeartbeatTimeout));
  RETURN_IF_ERROR(ConnectSocket(socket_, endpoint_, server_key_));
  connected_ = true;
  return Status::Ok();
}

Result<wire::DecodedResponse> RpcChannel::Call(uint64_t request_id, Frame request,
                                               Millis timeout) {
  RETURN_IF_ERROR(EnsureConnected());
  RETURN_IF_ERROR(SendFrame(socket_, std::move(request)).WithContext("calling " + endpoint_));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return DeadlineExceeded(
          "no reply from " + endpoint_ + " within " + std::to_string(timeout.count()) + " ms" +
          (context_.security().enabled()
               ? " (connections are authenticated: check that the peer trusts this process's key)"
               : ""));
    }
    auto received = ReceiveFrames(socket_, left);
    if (!received.ok()) {
      if (received.status().code() == StatusCode::kDeadlineExceeded) continue;
      return received.status();
    }
    if (received->empty()) continue;
    auto response = wire::DecodeResponse(std::move(received->back()));
    if (!response.ok()) return response.status().WithContext("reply from " + endpoint_);
    if (response->request_id != request_id) continue;  // a late reply to an earlier call
    return response;
  }
}

}  // namespace ember
