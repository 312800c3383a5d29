// ZeroMQ adapter implementation.
#include "common/transport.h"

#include <cstring>

namespace ember {
namespace {

std::string ZmqError(const char* what, const zmq::error_t& e) {
  return std::string(what) + ": " + e.what();
}

}  // namespace

Result<zmq::socket_t> MakeSocket(zmq::context_t& context, zmq::socket_type type) {
  try {
    zmq::socket_t socket(context, type);
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(wire::kMaxFrameBytes));
    socket.set(zmq::sockopt::sndhwm, 0);
    socket.set(zmq::sockopt::rcvhwm, 0);
    return socket;
  } catch (const zmq::error_t& e) {
    return Internal(ZmqError("creating socket", e));
  }
}

Result<std::string> BindSocket(zmq::socket_t& socket, const std::string& endpoint) {
  try {
    socket.bind(endpoint);
    return socket.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Unavailable(ZmqError(("binding " + endpoint).c_str(), e));
  }
}

Status ConnectSocket(zmq::socket_t& socket, const std::string& endpoint) {
  try {
    socket.connect(endpoint);
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    return InvalidArgument(ZmqError(("connecting to '" + endpoint + "'").c_str(), e));
  }
}

Status SendFrames(zmq::socket_t& socket, std::vector<zmq::message_t>& frames) {
  try {
    for (size_t i = 0; i < frames.size(); ++i) {
      const auto flags = zmq::send_flags::dontwait |
                         (i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
      if (!socket.send(frames[i], flags)) return Unavailable("send would block");
    }
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    return Unavailable(ZmqError("send", e));
  }
}

Result<std::vector<zmq::message_t>> ReceiveFrames(zmq::socket_t& socket, Millis timeout) {
  try {
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) == 0) return DeadlineExceeded("no message");
    std::vector<zmq::message_t> frames;
    do {
      zmq::message_t frame;
      if (!socket.recv(frame, zmq::recv_flags::dontwait)) break;
      frames.push_back(std::move(frame));
    } while (socket.get(zmq::sockopt::rcvmore));
    return frames;
  } catch (const zmq::error_t& e) {
    return Unavailable(ZmqError("receive", e));
  }
}

Result<zmq::socket_t> MonitorLink(zmq::context_t& context, zmq::socket_t& socket,
                                  const std::string& name) {
  if (zmq_socket_monitor(socket.handle(), name.c_str(),
                         ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) != 0) {
    return Internal("monitoring a socket on " + name + ": " + zmq_strerror(zmq_errno()));
  }
  ASSIGN_OR_RETURN(zmq::socket_t monitor, MakeSocket(context, zmq::socket_type::pair));
  RETURN_IF_ERROR(ConnectSocket(monitor, name));
  return monitor;
}

Result<LinkEvent> ReceiveLinkEvent(zmq::socket_t& monitor) {
  ASSIGN_OR_RETURN(std::vector<zmq::message_t> frames, ReceiveFrames(monitor, Millis(0)));
  // Frame 1: the event (uint16) and a value (uint32), host byte order; frame 2: the endpoint.
  if (frames.empty() || frames[0].size() < sizeof(uint16_t)) return LinkEvent::kOther;
  uint16_t event = 0;
  std::memcpy(&event, frames[0].data(), sizeof(event));
  if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) return LinkEvent::kUp;
  if (event == ZMQ_EVENT_DISCONNECTED) return LinkEvent::kDown;
  return LinkEvent::kOther;
}

RpcChannel::RpcChannel(zmq::context_t& context, std::string endpoint)
    : context_(context), endpoint_(std::move(endpoint)) {}

Status RpcChannel::EnsureConnected() {
  if (connected_) return Status::Ok();
  ASSIGN_OR_RETURN(socket_, MakeSocket(context_, zmq::socket_type::dealer));
  RETURN_IF_ERROR(ConnectSocket(socket_, endpoint_));
  connected_ = true;
  return Status::Ok();
}

Result<wire::DecodedResponse> RpcChannel::Call(uint64_t request_id, zmq::message_t request,
                                               Millis timeout) {
  RETURN_IF_ERROR(EnsureConnected());
  std::vector<zmq::message_t> frames;
  frames.push_back(std::move(request));
  RETURN_IF_ERROR(SendFrames(socket_, frames).WithContext("calling " + endpoint_));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return DeadlineExceeded("no reply from " + endpoint_ + " within " +
                              std::to_string(timeout.count()) + " ms");
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
