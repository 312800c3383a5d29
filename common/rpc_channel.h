// RpcChannel: a synchronous request/response channel to one peer over a DEALER socket.
//
// Replies whose request id does not match the outstanding call (late replies to calls that
// timed out) are discarded. One thread at a time.
#pragma once

#include <cstdint>
#include <string>

#include "common/frame.h"
#include "common/status.h"
#include "common/transport.h"
#include "common/wire.h"

namespace ember {

class RpcChannel {
 public:
  // `context` is borrowed and must outlive the channel.
  RpcChannel(Context& context, std::string endpoint);

  const std::string& endpoint() const { return endpoint_; }
  uint64_t NextRequestId() { return next_request_id_++; }

  // Sends `request` (encoded with header.request_id == the id passed) and waits for its reply.
  // Transport failures give Unavailable/DeadlineExceeded; a remote error comes back as the
  // response's status.
  Result<wire::DecodedResponse> Call(uint64_t request_id, Frame request, Millis timeout);

 private:
  Status EnsureConnected();

  Context& context_;
  std::string endpoint_;
  Socket socket_;
  bool connected_ = false;
  uint64_t next_request_id_ = 1;
};

}  // namespace ember
