// The transport: ember's only window onto ZeroMQ. Contexts, sockets, polling, connection
// monitors and frames (common/frame.h) are wrapped here, and no other code includes <zmq.hpp>;
// a request/response channel to one peer over it is common/rpc_channel.h.
//
// cppzmq throws zmq::error_t; these wrappers catch it and return Status, so nothing above this
// layer handles ZeroMQ exceptions. Every socket gets ember's defaults: no linger on close,
// inbound frames capped at wire::kMaxFrameBytes, send and receive high-water marks from its
// Context (the process's limits.socket_queue), and a ROUTER that cannot queue a message for its
// peer fails the send instead of dropping it silently (so the caller can count it).
//
// Authentication: a Context made with a key pair (common/transport_security.h) makes every TCP
// socket it opens a CurveZMQ socket. A bound socket is a Curve server: the Context's ZAP handler
// admits only trusted public keys (logging each refused peer once) and tags every message with
// the sender's key and role, which ReceiveMessage returns as a Peer. A connecting socket is a
// Curve client and must name the public key of the server it connects to. inproc sockets stay
// plain. Without keys, a TCP bind to anything but loopback is refused unless `insecure` is set.
//
// Thread-safety: a Context may be shared by every thread of a process; a Socket belongs to one
// thread at a time (ZeroMQ's rule).
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/frame.h"
#include "common/millis.h"
#include "common/peer.h"
#include "common/status.h"
#include "common/transport_security.h"

namespace ember {

// ZeroMQ's I/O threads and the inproc namespace of one process (or of one component in it).
class Context {
 public:
  explicit Context(int io_threads = 1, TransportSecurity security = {});
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const TransportSecurity& security() const;
  // Messages a socket made from now on queues per connection and direction (ZeroMQ's send and
  // receive high-water marks); a send beyond it fails as "would block". Default 10'000.
  void set_queue_limit(int messages);
  // Ends every blocking call on this context's sockets at once (they fail, ZeroMQ's ETERM), and
  // every later one: for an owner closing down while a thread still waits on a peer that is gone.
  // Its sockets must still be closed before the context goes.
  void Shutdown();
  // Whether Shutdown() was called: calls failing now fail for good, asking again is pointless.
  bool shut_down() const;

 private:
  friend struct TransportAccess;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The ZeroMQ socket patterns ember uses.
enum class SocketKind : uint8_t {
  kRouter,  // a server's side: replies go to the peer a request came from
  kDealer,  // a client's side: requests to one peer, replies in any order
  kPush,    // one-way wake-ups inside a process
  kPull,
  kPair,    // connection events of a monitored socket
};

class Socket {
 public:
  Socket();  // closed; assign an opened one
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  ~Socket();

  bool is_open() const;
  void Close();

 private:
  friend struct TransportAccess;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Opens a socket of `kind` with ember's defaults.
Result<Socket> MakeSocket(Context& context, SocketKind kind);
// Binds `endpoint` (a "tcp://host:*" wildcard picks a free port) and returns the bound endpoint.
// FailedPrecondition for a non-loopback TCP address when the context has no keys and is not
// insecure.
Result<std::string> BindSocket(Socket& socket, const std::string& endpoint);
// ZeroMQ heartbeats on the connections `socket` makes from now on: every `interval` it pings the
// peer, and a connection that heard nothing for `timeout` is dropped and made again (the host
// name resolved again). So a peer that vanished without closing its connections (its container
// or node gone, its address now another's or nobody's) is noticed. For sockets whose messages are
// small (a slow transfer of a large frame holds the peer's answer back). Call before connecting.
Status SetHeartbeats(Socket& socket, Millis interval, Millis timeout);
// Connects to `endpoint`. With keys, a TCP endpoint needs the public key of the server there
// (`server_key`); FailedPrecondition when it is empty.
Status ConnectSocket(Socket& socket, const std::string& endpoint,
                     const std::string& server_key = "");
// Whether `endpoint` is local to this machine: inproc, ipc, or TCP on a loopback address.
bool IsLoopbackEndpoint(const std::string& endpoint);

// Sends the frames as one multipart message, without waiting: ResourceExhausted when the queue to
// the peer is full (the frames stay as they were), Unavailable when the peer cannot be reached (a
// ROUTER's peer that is gone). The frames are consumed when sent.
Status SendFrames(Socket& socket, std::vector<Frame>& frames);
// Sends one single-frame message (non-blocking, as SendFrames).
Status SendFrame(Socket& socket, Frame frame);
// Receives one multipart message, waiting at most `timeout` (DeadlineExceeded when none came).
Result<std::vector<Frame>> ReceiveFrames(Socket& socket, Millis timeout);

// A message and who sent it: the key and role the ZAP handler admitted, or Peer{} (insecure)
// when the socket does not authenticate (no keys, or inproc).
struct ReceivedMessage {
  std::vector<Frame> frames;
  Peer peer;
};
Result<ReceivedMessage> ReceiveMessage(Socket& socket, Millis timeout);

// Waits until one of several sockets has a message to read.
class Poller {
 public:
  Poller();
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  // Forgets the sockets added so far.
  void Clear();
  // Watches `socket` (borrowed until Clear) for input; returns its index for Readable.
  size_t Add(Socket& socket);
  // Waits at most `timeout` for input on any of the sockets. OK also when none became readable
  // (or a signal interrupted the wait).
  Status Wait(Millis timeout);
  // Whether the socket at `index` had input at the last Wait.
  bool Readable(size_t index) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

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
Result<Socket> MonitorLink(Context& context, Socket& socket, const std::string& name);
// The next event waiting on a MonitorLink socket, without waiting; DeadlineExceeded when none is.
Result<LinkEvent> ReceiveLinkEvent(Socket& monitor);

}  // namespace ember
