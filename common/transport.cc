// The ZeroMQ adapter: the only file that includes <zmq.hpp>. Frames, contexts, sockets, polling,
// connection monitors and CurveZMQ (with the ZAP handler that admits trusted keys) over cppzmq,
// with every zmq::error_t turned into a Status.
#include "common/transport.h"

#include <spdlog/spdlog.h>

#include <zmq.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

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

// The ZAP domain of ember's Curve servers, and the metadata property carrying a peer's role.
constexpr const char* kZapDomain = "ember";
constexpr const char* kRoleProperty = "Role";
constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";  // fixed by RFC 27
constexpr std::chrono::milliseconds kZapPoll{100};

std::string Z85Key(const void* bytes32) {
  std::array<char, 41> text{};
  if (zmq_z85_encode(text.data(), static_cast<const uint8_t*>(bytes32), 32) == nullptr) return "";
  return text.data();
}

// ZMTP metadata: 1-byte name length, name, 4-byte big-endian value length, value.
std::string Metadata(std::string_view name, std::string_view value) {
  std::string out;
  out.push_back(static_cast<char>(name.size()));
  out.append(name);
  const uint32_t size = static_cast<uint32_t>(value.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(size >> shift));
  out.append(value);
  return out;
}

}  // namespace

struct Frame::Impl {
  zmq::message_t message;
};

// The ZAP handler (RFC 27): answers the Curve handshakes of the context's bound sockets, admitting
// the trusted keys with their role as metadata, refusing the rest (logged once per peer).
class ZapHandler {
 public:
  ZapHandler(zmq::context_t& context, const TransportSecurity& security)
      : security_(security), socket_(context, zmq::socket_type::rep) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.bind(kZapEndpoint);
    thread_ = std::thread([this] { Run(); });
  }
  ~ZapHandler() {
    stop_.store(true);
    thread_.join();
  }

 private:
  void Run() {
    while (!stop_.load()) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      try {
        if (zmq::poll(&item, 1, kZapPoll) == 0) continue;
        std::vector<zmq::message_t> request;
        do {
          request.emplace_back();
          if (!socket_.recv(request.back(), zmq::recv_flags::dontwait)) break;
        } while (socket_.get(zmq::sockopt::rcvmore));
        Answer(request);
      } catch (const zmq::error_t& e) {
        if (e.num() == ETERM) return;  // the context was shut down
        if (e.num() != EINTR) spdlog::error("transport: ZAP handler: {}", e.what());
      }
    }
  }

  // request: version, request id, domain, address, routing id, mechanism, credentials...
  void Answer(std::vector<zmq::message_t>& request) {
    if (request.size() < 6) return;  // not a ZAP request; REP needs no reply to garbage
    const std::string address = request[3].to_string();
    const std::string mechanism = request[5].to_string();
    std::string key;
    if (mechanism == "CURVE" && request.size() >= 7 && request[6].size() == 32) {
      key = Z85Key(request[6].data());
    }
    const TrustedKey* trusted = key.empty() ? nullptr : security_.Find(key);
    std::array<zmq::message_t, 6> reply;
    reply[0] = zmq::message_t(std::string_view("1.0"));
    reply[1] = zmq::message_t(request[1].data(), request[1].size());
    if (trusted != nullptr) {
      reply[2] = zmq::message_t(std::string_view("200"));
      reply[3] = zmq::message_t(std::string_view("OK"));
      reply[4] = zmq::message_t(key.data(), key.size());
      const std::string metadata = Metadata(kRoleProperty, PeerRoleName(trusted->role));
      reply[5] = zmq::message_t(metadata.data(), metadata.size());
    } else {
      reply[2] = zmq::message_t(std::string_view("400"));
      reply[3] = zmq::message_t(std::string_view("key not trusted"));
      LogRefusal(address, mechanism, key);
    }
    for (size_t i = 0; i < reply.size(); ++i) {
      socket_.send(reply[i], i + 1 < reply.size() ? zmq::send_flags::sndmore
                                                  : zmq::send_flags::none);
    }
  }

  void LogRefusal(const std::string& address, const std::string& mechanism,
                  const std::string& key) {
    const std::string who = address + " " + (key.empty() ? mechanism : key);
    if (refused_.size() >= kRefusalsRemembered) {
      if (refused_.size() == kRefusalsRemembered) {
        spdlog::warn("transport: {} peers refused; further refusals are not logged",
                     kRefusalsRemembered);
        refused_.insert("");  // logs that once
      }
      return;
    }
    if (!refused_.insert(who).second) return;
    if (key.empty()) {
      spdlog::warn("transport: refused a connection from {} without a CurveZMQ key (mechanism {})",
                   address, mechanism);
    } else {
      spdlog::warn("transport: refused a connection from {}: key '{}...' is not trusted", address,
                   key.substr(0, 8));
    }
  }

  const TransportSecurity& security_;
  zmq::socket_t socket_;
  std::atomic<bool> stop_{false};
  // Peers already logged, bounded: a flood of strangers cannot grow it without limit.
  static constexpr size_t kRefusalsRemembered = 4096;
  std::set<std::string> refused_;
  std::thread thread_;
};

struct Context::Impl {
  Impl(int io_threads, TransportSecurity settings)
      : security(std::move(settings)), context(io_threads) {
    if (security.enabled()) zap = std::make_unique<ZapHandler>(context, security);
  }
  ~Impl() { zap.reset(); }  // its socket closes before the context terminates

  TransportSecurity security;
  zmq::context_t context;
  std::atomic<bool> shut_down{false};
  std::unique_ptr<ZapHandler> zap;
  int queue_limit = 10'000;
};
struct Socket::Impl {
  zmq::socket_t socket;
  const TransportSecurity* security = nullptr;  // the context's, which outlives the socket
};

namespace {

bool IsTcp(const std::string& endpoint) { return endpoint.rfind("tcp://", 0) == 0; }
bool IsIpc(const std::string& endpoint) { return endpoint.rfind("ipc://", 0) == 0; }
bool IsInproc(const std::string& endpoint) { return endpoint.rfind("inproc://", 0) == 0; }

// With keys, every endpoint another process can reach runs CurveZMQ: tcp and ipc do; inproc
// stays inside this process; any other transport is refused, as it could not be secured.
Result<bool> NeedsCurve(const TransportSecurity& security, const std::string& endpoint,
                        std::string_view what) {
  if (!security.enabled() || IsInproc(endpoint)) return false;
  if (IsTcp(endpoint) || IsIpc(endpoint)) return true;
  return FailedPrecondition(std::string(what) + " " + endpoint + ": this process authenticates "
                            "every connection, and only tcp:// and ipc:// endpoints can be "
                            "authenticated (CurveZMQ)");
}

}  // namespace

// The ZeroMQ objects behind the transport's types, for this file alone.
struct TransportAccess {
  static zmq::message_t& Message(Frame& frame) {
    if (!frame.impl_) frame.impl_.reset(new Frame::Impl);
    return frame.impl_->message;
  }
  static zmq::context_t& Of(Context& context) { return context.impl_->context; }
  static int QueueLimit(const Context& context) { return context.impl_->queue_limit; }
  static zmq::socket_t& Of(Socket& socket) { return socket.impl_->socket; }
  static Socket Wrap(zmq::socket_t socket, const TransportSecurity* security) {
    Socket wrapped;
    wrapped.impl_.reset(new Socket::Impl{std::move(socket), security});
    return wrapped;
  }
  static const TransportSecurity* SecurityOf(Socket& socket) { return socket.impl_->security; }
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

Context::Context(int io_threads, TransportSecurity security)
    : impl_(new Impl(io_threads, std::move(security))) {}
Context::~Context() = default;
const TransportSecurity& Context::security() const { return impl_->security; }
void Context::set_queue_limit(int messages) { impl_->queue_limit = messages; }
void Context::Shutdown() {
  impl_->shut_down = true;
  impl_->context.shutdown();
}

bool Context::shut_down() const { return impl_->shut_down.load(); }

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
    return Access::Wrap(std::move(socket), &context.security());
  } catch (const zmq::error_t& e) {
    return Internal(ZmqError("creating socket", e));
  }
}

bool IsLoopbackEndpoint(const std::string& endpoint) {
  if (!IsTcp(endpoint)) return true;  // inproc, ipc: this machine only
  const std::string address = endpoint.substr(6);
  const size_t colon = address.rfind(':');
  const std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  return host.rfind("127.", 0) == 0 || host == "localhost" || host == "[::1]" || host == "::1";
}

Result<std::string> BindSocket(Socket& socket, const std::string& endpoint) {
  if (!socket.is_open()) return Internal("binding " + endpoint + ": the socket is closed");
  const TransportSecurity& security = *Access::SecurityOf(socket);
  if (!security.enabled() && !security.insecure && !IsLoopbackEndpoint(endpoint)) {
    return FailedPrecondition(
        "refusing to bind " + endpoint +
        " without keys: anyone who can reach it could read and change every row. Make keys "
        "with `ember keygen`, trust them in the config's security section and pass --key, or "
        "pass --insecure to bind without authentication");
  }
  ASSIGN_OR_RETURN(const bool curve, NeedsCurve(security, endpoint, "binding"));
  try {
    if (curve) {
      zmq::socket_t& zsocket = Access::Of(socket);
      zsocket.set(zmq::sockopt::curve_server, 1);
      zsocket.set(zmq::sockopt::curve_secretkey, security.own.secret_key);
      zsocket.set(zmq::sockopt::zap_domain, kZapDomain);
    }
    Access::Of(socket).bind(endpoint);
    return Access::Of(socket).get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Unavailable(ZmqError("binding " + endpoint, e));
  }
}

Status SetHeartbeats(Socket& socket, Millis interval, Millis timeout) {
  if (!socket.is_open()) return Internal("setting heartbeats: the socket is closed");
  try {
    zmq::socket_t& zsocket = Access::Of(socket);
    zsocket.set(zmq::sockopt::heartbeat_ivl, static_cast<int>(interval.count()));
    zsocket.set(zmq::sockopt::heartbeat_timeout, static_cast<int>(timeout.count()));
  } catch (const zmq::error_t& e) {
    return Internal(ZmqError("setting heartbeats", e));
  }
  return Status::Ok();
}

Status ConnectSocket(Socket& socket, const std::string& endpoint, const std::string& server_key) {
  if (!socket.is_open()) return Internal("connecting to " + endpoint + ": the socket is closed");
  const TransportSecurity& security = *Access::SecurityOf(socket);
  ASSIGN_OR_RETURN(const bool curve, NeedsCurve(security, endpoint, "connecting to"));
  try {
    if (curve) {
      if (server_key.empty()) {
        return FailedPrecondition("connecting to " + endpoint +
                                  ": no public key is known for it, and this process "
                                  "authenticates every connection");
      }
      RETURN_IF_ERROR(CheckKey(server_key, "the public key of " + endpoint));
      zmq::socket_t& zsocket = Access::Of(socket);
      zsocket.set(zmq::sockopt::curve_serverkey, server_key);
      zsocket.set(zmq::sockopt::curve_publickey, security.own.public_key);
      zsocket.set(zmq::sockopt::curve_secretkey, security.own.secret_key);
    }
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

namespace {

// The peer the ZAP handler admitted for the message `frames` came in, from their metadata; an
// unauthenticated one when they carry none (they came over inproc, within this process).
Peer PeerOf(std::vector<Frame>& frames) {
  for (Frame& frame : frames) {
    zmq_msg_t* message = Access::Message(frame).handle();
    const char* key = zmq_msg_gets(message, "User-Id");
    const char* role = zmq_msg_gets(message, kRoleProperty);
    if (key == nullptr || role == nullptr) continue;
    for (PeerRole candidate : kKeyRoles) {
      if (PeerRoleName(candidate) == role) return Peer{candidate, key};
    }
  }
  // No identity: in a process with keys, such a message may do nothing.
  return Peer{PeerRole::kUnauthenticated, ""};
}

}  // namespace

Result<ReceivedMessage> ReceiveMessage(Socket& socket, Millis timeout) {
  ASSIGN_OR_RETURN(std::vector<Frame> frames, ReceiveFrames(socket, timeout));
  ReceivedMessage message;
  message.peer = Access::SecurityOf(socket)->enabled() ? PeerOf(frames) : Peer{};
  message.frames = std::move(frames);
  return message;
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
