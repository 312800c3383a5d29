// The ZeroMQ adapter: socket set-up, exception-free send/receive, connection monitors, and a
// synchronous RPC channel.
//
// cppzmq throws zmq::error_t; these helpers catch it and return Status, so nothing above this
// layer handles ZeroMQ exceptions. A socket belongs to one thread at a time.
#pragma once

#include <zmq.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/wire.h"

namespace ember {

using Millis = std::chrono::milliseconds;

// Creates a socket with ember's defaults: no linger on close, inbound frames capped at
// wire::kMaxFrameBytes, unbounded high-water marks (flow control is request/response).
Result<zmq::socket_t> MakeSocket(zmq::context_t& context, zmq::socket_type type);

// Binds `endpoint` (a "tcp://host:*" wildcard picks a free port) and returns the bound endpoint.
Result<std::string> BindSocket(zmq::socket_t& socket, const std::string& endpoint);
Status ConnectSocket(zmq::socket_t& socket, const std::string& endpoint);

// Sends the frames as one multipart message (non-blocking; Unavailable if it would block).
Status SendFrames(zmq::socket_t& socket, std::vector<zmq::message_t>& frames);
// Receives one multipart message, waiting at most `timeout` (DeadlineExceeded when none came).
Result<std::vector<zmq::message_t>> ReceiveFrames(zmq::socket_t& socket, Millis timeout);

// What happened to a connecting socket's connection (zmq_socket_monitor events).
enum class LinkEvent : uint8_t {
  kUp,     // a connection completed its handshake: messages flow
  kDown,   // the connection was lost; ZeroMQ reconnects by itself
  kOther,  // anything else (the monitor stopped, an event of another kind)
};
// Starts watching `socket` (connecting, owned by the calling thread) for connections up and down.
// Events arrive on the returned PAIR socket, connected to the inproc endpoint `name` (unique in
// `context`); poll it with the thread's other sockets and read it with ReceiveLinkEvent. Close it
// after `socket`.
Result<zmq::socket_t> MonitorLink(zmq::context_t& context, zmq::socket_t& socket,
                                  const std::string& name);
// The next event waiting on a MonitorLink socket, without waiting; DeadlineExceeded when none is.
Result<LinkEvent> ReceiveLinkEvent(zmq::socket_t& monitor);

// A request/response channel to one peer over a DEALER socket. Replies whose request id does not
// match the outstanding call (late replies to calls that timed out) are discarded. One thread.
class RpcChannel {
 public:
  // `context` is borrowed and must outlive the channel.
  RpcChannel(zmq::context_t& context, std::string endpoint);

  const std::string& endpoint() const { return endpoint_; }
  uint64_t NextRequestId() { return next_request_id_++; }

  // Sends `request` (encoded with header.request_id == the id passed) and waits for its reply.
  // Transport failures give Unavailable/DeadlineExceeded; a remote error comes back as the
  // response's status.
  Result<wire::DecodedResponse> Call(uint64_t request_id, zmq::message_t request, Millis timeout);

 private:
  Status EnsureConnected();

  zmq::context_t& context_;
  std::string endpoint_;
  zmq::socket_t socket_;
  bool connected_ = false;
  uint64_t next_request_id_ = 1;
};

}  // namespace ember
