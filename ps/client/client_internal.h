// Private to ps/client: the state of a Client, shared by the files it is split into.
//
//   client.cc               set-up, registration, heartbeats, submitting pulls and pushes
//   client_io.cc            the I/O thread: sending, replies, retries, resends after reconnection
//                           (each pull, lookup, push or hint an Operation, over ServerLinks)
//   client_server_calls.cc  the calls to every server (apply a clock, checkpoint, stats)
//
// Threads: callers submit operations through the submission queues (submit_mutex_) and wake the
// I/O thread; everything marked "I/O thread" is touched by that thread only. The server sockets
// live on the I/O thread; the scheduler's calls go through scheduler_ (thread-safe).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/transport.h"
#include "common/wire.h"
#include "ps/client/client.h"
#include "ps/client/every_server_calls.h"
#include "ps/client/operation.h"
#include "ps/client/server_links.h"

namespace ember::ps {

struct Client::Impl {
  using Clock = std::chrono::steady_clock;

  struct InFlight {
    std::shared_ptr<Operation> op;
    uint32_t server = 0;
    std::vector<uint32_t> positions;  // indexes into op->keys; empty: all of them
    // Sent while the connection was down: it waits in ZeroMQ's queue and goes out when the
    // connection is back, so that reconnection need not send it again.
    bool queued_while_down = false;
  };
  // Sub-requests a server asked to retry (its partition is being handed over), due at `at`.
  struct Retry {
    Clock::time_point at;
    std::shared_ptr<Operation> op;
    std::vector<uint32_t> positions;
  };

  explicit Impl(ClientOptions client_options);
  // Stops the threads; what is still queued or in flight fails with Aborted.
  ~Impl();

  // ---- Callers' side (client.cc, client_server_calls.cc) ----
  Status Register();
  Status Start();  // opens the sockets and starts the threads
  Ticket Submit(std::shared_ptr<Operation> op);
  // Sends encode({id, epoch}) to every server at once from the I/O thread and waits until all
  // answered (their bodies, by server id), the first error (with `what` and the server's
  // endpoint as context) or `timeout`.
  Result<std::vector<wire::ResponseBody>> CallEveryServer(
      std::function<Frame(const wire::RequestHeader&)> encode, std::string what, Millis timeout);
  void HeartbeatLoop();

  // ---- I/O thread (client_io.cc) ----
  void IoLoop();
  void DrainSubmissions();
  void Dispatch(const std::shared_ptr<Operation>& op, std::span<const uint32_t> positions);
  // Encodes the sub-request `request_id` of `op` for the keys at `positions`.
  Frame Encode(const Operation& op, uint64_t request_id, std::span<const uint32_t> positions) const;
  // A pull's sub-request: the keys at `positions` (ascending; empty: all), grouped by table.
  Frame EncodePull(const Operation& op, const wire::RequestHeader& header,
                   std::span<const uint32_t> positions) const;
  // Sends a request to a server and records it as in flight; false (and `op` failed) if the
  // socket refused it.
  bool Send(const std::shared_ptr<Operation>& op, uint32_t server, uint64_t request_id,
            std::vector<uint32_t> positions);
  // Reads the connection events of server `server`: what is in flight to it is resent when it is
  // back, or rerouted when it left the cluster.
  void OnLinkEvents(uint32_t server);
  void Resend(uint32_t server);
  // Sends what is in flight to `server` (which holds no partition any more) to the new owners.
  void RerouteInFlight(uint32_t server);
  void OnReply(Frame payload);
  void OnOperationReply(InFlight entry, wire::DecodedResponse response);
  void Fail(const std::shared_ptr<Operation>& op, Status status);
  void ExpireDeadlines();
  // Dispatches the retries that are due.
  void SendDueRetries();
  // Asks the scheduler for the routing table and connects to servers new in it.
  Status RefreshRouting();

  // ---- Constant after Connect ----
  const ClientOptions options_;
  const uint64_t sender_id_;  // random, never 0
  const std::shared_ptr<Context> context_;
  // The scheduler's sockets run on an I/O thread of their own: ZeroMQ resolves a peer's host name
  // on its context's I/O thread, so a slow DNS answer for a server that went away (reconnecting)
  // would otherwise hold up heartbeats until the scheduler declared this trainer dead.
  const std::shared_ptr<Context> scheduler_context_;
  SchedulerClient scheduler_;  // thread-safe
  uint32_t trainer_id_ = 0;
  uint64_t start_clock_ = 0;
  SyncOptions sync_;
  std::vector<TableSpec> tables_;

  mutable std::mutex routing_mutex_;  // guards routing_ (written by the I/O thread only)
  RoutingTable routing_;

  // ---- Submissions, guarded by submit_mutex_ ----
  std::mutex submit_mutex_;
  std::deque<std::shared_ptr<Operation>> submissions_;
  std::deque<std::shared_ptr<EveryServerCalls::Call>> call_submissions_;
  Socket wake_sender_;
  Socket wake_receiver_;  // I/O thread

  // ---- I/O thread ----
  ServerLinks links_;
  // By request id, ascending: the first is the lowest still in flight.
  std::map<uint64_t, InFlight> in_flight_;
  std::vector<std::shared_ptr<Operation>> active_;
  std::vector<Retry> retries_;
  // Calls to every server (request ids from the same sequence as in_flight_'s).
  EveryServerCalls every_server_calls_;
  uint64_t next_request_id_ = 1;

  std::atomic<uint64_t> resent_{0};
  std::atomic<bool> stopping_{false};
  std::thread io_thread_;

  std::mutex heartbeat_mutex_;  // with heartbeat_wake_: stops the heartbeat thread promptly
  std::condition_variable heartbeat_wake_;
  std::thread heartbeat_thread_;
};

}  // namespace ember::ps
