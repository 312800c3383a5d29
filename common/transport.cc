// The ZeroMQ adapter: the only file that includes <zmq.hpp>. Frames, contexts, sockets, polling
// and connection monitors over cppzmq, with every zmq::error_t turned into a Status.
#include "common/transport.h"

#include <zmq.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ember {
namespace {

std::string ZmqError(const std::string& what, const zmq::error_t& e) {
  return what + ": " + e.what();
}

zmq::socket_type ToZmq(SocketKind kind) {
  switch (kind) {
    case SocketKind::kRouter: return zmq::socket_type::router;
    case SocketKind::kDealer: return zmq::socket_type::dealer;
    case SocketKind::kPush: return zmq::socket_type::push;
    case SocketKind::kPull: return zmq::socket_type::pull;
    case SocketKind::kPair: return zmq::socket_type::pair;
  }
  return zmq::socket_type::pair;
}

}  // namespace

struct Frame::Impl {
  zmq::message_t message;
};
struct Context::Impl {
  zmq::context_t context;
  int queue_limit = 10'000;
};
struct Socket::Impl {
  zmq::socket_t socket;
};

// The ZeroMQ objects behind the transport's types, for this file alone.
struct TransportAccess {
  static zmq::message_t& Message(Frame& frame) {
    if (!frame.impl_) frame.impl_.reset(new Frame::Impl);
    return frame.impl_->message;
  }
  static zmq::context_t& Of(Context& context) { return context.impl_->context; }
  static int QueueLimit(const Context& context) { return context.impl_->queue_limit; }
  static zmq::socket_t& Of(Socket& socket) { return socket.impl_->socket; }
  static Socket Wrap(zmq::socket_t socket) {
    Socket wrapped;
    wrapped.impl_.reset(new Socket::Impl{std::move(socket)});
    return wrapped;
  }
};

namespace {
using Access = TransportAccess;
}  // namespace

// ---- Frame ----

Frame::Frame() = default;
Frame::Frame(size_t size) : impl_(new Impl{zmq::message_t(size)}) {}
Frame::Frame(std::string_view bytes) : impl_(new Impl{zmq::message_t(bytes.data(), bytes.size())}) {}
Frame::Frame(const void* data, size_t size) : impl_(new Impl{zmq::message_t(data, size)}) {}
Frame Frame::AdoptMalloced(void* data, size_t size) {
  Frame frame;
  frame.impl_.reset(new Impl{zmq::message_t(data, size, [](void* p, void*) { std::free(p); })});
  return frame;
}
Frame::Frame(Frame&& other) noexcept = default;
Frame& Frame::operator=(Frame&& other) noexcept = default;
Frame::~Frame() = default;

void* Frame::data() { return impl_ ? impl_->message.data() : nullptr; }
const void* Frame::data() const { return impl_ ? impl_->message.data() : nullptr; }
size_t Frame::size() const { return impl_ ? impl_->message.size() : 0; }

// ---- Context and Socket ----

Context::Context(int io_threads) : impl_(new Impl{zmq::context_t(io_threads)}) {}
Context::~Context() = default;
void Context::set_queue_limit(int messages) { impl_->queue_limit = messages; }

Socket::Socket() = default;
Socket::Socket(Socket&& other) noexcept = default;
Socket& Socket::operator=(Socket&& other) noexcept = default;
Socket::~Socket() = default;

bool Socket::is_open() const { return impl_ != nullptr && impl_->socket.handle() != nullptr; }
void Socket::Close() { impl_.reset(); }

Result<Socket> MakeSocket(Context& context, SocketKind kind) {
  try {
    zmq::socket_t socket(Access::Of(context), ToZmq(kind));
    socket.set(zmq::sockopt::linger, 0);
    socket.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(kMaxFrameBytes));
    socket.set(zmq::sockopt::sndhwm, Access::QueueLimit(context));
    socket.set(zmq::sockopt::rcvhwm, Access::QueueLimit(context));
    if (kind == SocketKind::kRouter) socket.set(zmq::sockopt::router_mandatory, 1);
    return Access::Wrap(std::move(socket));
  } catch (const zmq::error_t& e) {
    return Internal(ZmqError("creating socket", e));
  }
}

Result<std::string> BindSocket(Socket& socket, const std::string& endpoint) {
  if (!socket.is_open()) return Internal("binding " + endpoint + ": the socket is closed");
  try {
    Access::Of(socket).bind(endpoint);
    return Access::Of(socket).get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Unavailable(ZmqError("binding " + endpoint, e));
  }
}

Status ConnectSocket(Socket& socket, const std::string& endpoint) {
  if (!socket.is_open()) return Internal("connecting to " + endpoint + ": the socket is closed");
  try {
    Access::Of(socket).connect(endpoint);
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    return InvalidArgument(ZmqError("connecting to '" + endpoint + "'", e));
  }
}

Status SendFrames(Socket& socket, std::vector<Frame>& frames) {
  if (!socket.is_open()) return Unavailable("send: the socket is closed");
  try {
    for (size_t i = 0; i < frames.size(); ++i) {
      const auto flags = zmq::send_flags::dontwait |
                         (i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
      if (!Access::Of(socket).send(Access::Message(frames[i]), flags)) {
        return ResourceExhausted("send would block: the queue to the peer is full (" +
                                 std::to_string(Access::Of(socket).get(zmq::sockopt::sndhwm)) +
                                 " messages, limits.socket_queue)");
      }
    }
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    return Unavailable(ZmqError("send", e));
  }
}

Status SendFrame(Socket& socket, Frame frame) {
  std::vector<Frame> frames;
  frames.push_back(std::move(frame));
  return SendFrames(socket, frames);
}

Result<std::vector<Frame>> ReceiveFrames(Socket& socket, Millis timeout) {
  if (!socket.is_open()) return Unavailable("receive: the socket is closed");
  try {
    zmq::socket_t& zsocket = Access::Of(socket);
    zmq::pollitem_t item{zsocket.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) == 0) return DeadlineExceeded("no message");
    std::vector<Frame> frames;
    do {
      Frame frame;
      if (!zsocket.recv(Access::Message(frame), zmq::recv_flags::dontwait)) break;
      frames.push_back(std::move(frame));
    } while (zsocket.get(zmq::sockopt::rcvmore));
    return frames;
  } catch (const zmq::error_t& e) {
    return Unavailable(ZmqError("receive", e));
  }
}

// ---- Poller ----

struct Poller::Impl {
  std::vector<zmq::pollitem_t> items;
};

Poller::Poller() : impl_(new Impl) {}
Poller::~Poller() = default;

void Poller::Clear() { impl_->items.clear(); }

size_t Poller::Add(Socket& socket) {
  void* handle = socket.is_open() ? Access::Of(socket).handle() : nullptr;
  impl_->items.push_back({handle, 0, static_cast<short>(handle ? ZMQ_POLLIN : 0), 0});
  return impl_->items.size() - 1;
}

Status Poller::Wait(Millis timeout) {
  for (auto& item : impl_->items) item.revents = 0;
  try {
    zmq::poll(impl_->items.data(), impl_->items.size(), timeout);
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return Status::Ok();  // a signal: the caller looks at its flags
    return Unavailable(ZmqError("poll", e));
  }
}

bool Poller::Readable(size_t index) const {
  return index < impl_->items.size() && (impl_->items[index].revents & ZMQ_POLLIN) != 0;
}

// ---- Connection monitors ----

Result<Socket> MonitorLink(Context& context, Socket& socket, const std::string& name) {
  if (!socket.is_open()) return Internal("monitoring a closed socket on " + name);
  if (zmq_socket_monitor(Access::Of(socket).handle(), name.c_str(),
                         ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) != 0) {
    return Internal("monitoring a socket on " + name + ": " + zmq_strerror(zmq_errno()));
  }
  ASSIGN_OR_RETURN(Socket monitor, MakeSocket(context, SocketKind::kPair));
  RETURN_IF_ERROR(ConnectSocket(monitor, name));
  return monitor;
}

Result<LinkEvent> ReceiveLinkEvent(Socket& monitor) {
  ASSIGN_OR_RETURN(std::vector<Frame> frames, ReceiveFrames(monitor, Millis(0)));
  // Frame 1: the event (uint16) and a value (uint32), host byte order; frame 2: the endpoint.
  if (frames.empty() || frames[0].size() < sizeof(uint16_t)) return LinkEvent::kOther;
  uint16_t event = 0;
  std::memcpy(&event, frames[0].data(), sizeof(event));
  if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) return LinkEvent::kUp;
  if (event == ZMQ_EVENT_DISCONNECTED) return LinkEvent::kDown;
  return LinkEvent::kOther;
}

}  // namespace ember
