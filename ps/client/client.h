// Client: batched, asynchronous pull and push of embedding rows against a sharded cluster.
//
// A client registers with the scheduler (getting the table specs and the routing table), then
// splits every batch by owning server (and a large share into messages of at most
// max_keys_per_message keys) and sends the pieces to all servers at once from one I/O thread.
// Pull and Push return a Ticket at once, so a trainer can overlap the network with compute. A
// server that answers "not my partition" makes the client refresh its routing from the scheduler
// and resend just those keys; one that answers "retry" (Unavailable: a partition being handed
// over to another server) gets those keys again a few milliseconds later, routed afresh; every
// operation has a deadline.
//
// Servers that die and come back: the client watches each server connection (a ZeroMQ socket
// monitor). Requests sent while a server is down wait in ZeroMQ and go out when it is back; when
// the connection comes back after being lost, every request still in flight to that server is
// sent again with its request id, since the server may never have seen it or its answer may have
// been lost. A pull is simply answered twice (the later answer is ignored); a push carries the
// client's sender id (random, one per Client) and the lowest request id it still has in flight,
// so that the server applies it once however many copies arrive (ps/push_ledger.h). The
// operation's deadline (request_timeout) still bounds the wait: a server that does not come back
// in time fails it with DeadlineExceeded naming the server.
//
// Thread-safety: all public methods may be called from any thread. The spans passed to Pull and
// Push are borrowed: keep them alive and unchanged until the ticket completes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/routing_table.h"
#include "common/status.h"
#include "common/table_spec.h"
#include "common/rpc_channel.h"
#include "common/transport.h"
#include "common/wire.h"
#include "ps/client/ticket.h"

namespace ember::ps {

struct ClientOptions {
  std::string scheduler_endpoint;
  std::string name = "trainer";
  Millis request_timeout{30'000};   // a pull or push not answered by then fails
  Millis register_timeout{60'000};  // waiting for the cluster to form
  uint32_t max_routing_retries = 8; // stale-routing resends per operation
  wire::RowFormat row_format = wire::RowFormat::kF32;  // rows and gradients on the wire
  // A server's share of a batch larger than this goes as several messages, all sent at once, so
  // the server's threads work on them in parallel while earlier replies are on the wire.
  uint32_t max_keys_per_message = 4096;
  Millis heartbeat_interval{0};     // > 0: tell the scheduler this often that the trainer lives
};

class Client {
 public:
  static Result<std::unique_ptr<Client>> Connect(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  uint32_t trainer_id() const { return trainer_id_; }
  // The clock this trainer starts from (non-zero for a late joiner of a bsp/ssp run).
  uint64_t start_clock() const { return start_clock_; }
  const std::vector<TableSpec>& tables() const { return tables_; }
  Result<const TableSpec*> FindTable(std::string_view name) const;
  RoutingTable routing() const;

  // Fills out[i*dim .. (i+1)*dim) with the row of keys[i] (created on first pull).
  Ticket Pull(std::string_view table, std::span<const uint64_t> keys, std::span<float> out);
  // Applies one gradient row per key with the table's server-side optimizer. Keys should be
  // unique (sum duplicates first); `clock` is the trainer's step. `deferred` (bsp): the servers
  // hold the push until ApplyClock(clock) instead of applying it on arrival.
  Ticket Push(std::string_view table, std::span<const uint64_t> keys,
              std::span<const float> gradients, uint64_t clock = 0, bool deferred = false);

  // ---- Synchronised runs (client_clock.cc) ----
  // Reports that this trainer completed step `clock` and waits until the scheduler lets it start
  // the next one (bsp/ssp); the grant lists whose pushes make up `clock`. Aborted when the run
  // failed (a trainer died under the stop policy); DeadlineExceeded after `timeout`.
  Result<wire::ClockGrant> ReportClock(uint64_t clock, Millis timeout);
  // Tells the scheduler this trainer finished after `clock` steps: nobody waits for it any more.
  Status Leave(uint64_t clock, Millis timeout = Millis(10'000));
  // A checkpoint cut at `clock` (announced in a grant; protocol in ps/checkpoint.h): tells the
  // scheduler this trainer wrote its file and has no push in flight, and waits until every
  // trainer did (answer with coordinate set: this one completes the cut, then calls FinishCut) or
  // the cut is over (coordinate unset). The error of a failed cut comes back as the status.
  Result<wire::CutInfo> ArriveAtCut(uint64_t clock, Millis timeout);
  // The coordinator's report: the servers' part and the manifest are written (`outcome` OK) or not.
  Status FinishCut(uint64_t clock, const Status& outcome, Millis timeout);
  // Asks every server to apply the deferred pushes of `apply.clock`; returns once all did.
  Status ApplyClock(const wire::ApplyClockRequest& apply, Millis timeout);

  // Asks every server to write or load its checkpoint files (ps/checkpoint.h has the layout and
  // the checks around it); returns once all did, or the first error.
  Status Checkpoint(const wire::CheckpointRequest& checkpoint, Millis timeout);

  // Counters and table sizes of every server, in server-id order.
  Result<std::vector<wire::ServerStats>> Stats(Millis timeout = Millis(10'000));
  // Waits until `count` participants reached the barrier `name` at the scheduler.
  Status Barrier(std::string_view name, uint32_t count, Millis timeout);

  // The id servers know this client's pushes by (random, never 0).
  uint64_t sender_id() const { return sender_id_; }
  // Requests sent again after a connection to their server came back.
  uint64_t requests_resent() const { return resent_.load(std::memory_order_relaxed); }

 private:
  struct Operation;
  struct InFlight {
    std::shared_ptr<Operation> op;
    uint32_t server = 0;
    std::vector<uint32_t> positions;  // indexes into op->keys; empty: all of them
    // Sent while the connection was down: it waits in ZeroMQ's queue and goes out when the
    // connection is back, so that reconnection need not send it again.
    bool queued_while_down = false;
  };
  // One server's connection, owned by the I/O thread.
  struct ServerLink {
    Socket monitor;  // the socket's connection events (MonitorLink); closed after it
    Socket socket;   // DEALER
    std::string endpoint;
    bool down = false;  // lost, not back yet
  };

  explicit Client(ClientOptions options);
  Status Register();
  Ticket Submit(std::shared_ptr<Operation> op);
  // Sends encode({id, epoch}) to every server at once and waits for every answer; errors get
  // `what` and the server's endpoint as context. Takes control_mutex_.
  Status CallEveryServer(const std::function<Frame(const wire::RequestHeader&)>& encode,
                         const std::string& what, Millis timeout);

  // ---- I/O thread ----
  void IoLoop();
  void DrainSubmissions();
  void Dispatch(const std::shared_ptr<Operation>& op, std::span<const uint32_t> positions);
  // Encodes the sub-request `request_id` of `op` for the keys at `positions`.
  Frame Encode(const Operation& op, uint64_t request_id,
                        std::span<const uint32_t> positions) const;
  // Sends a request to a server and records it as in flight; false (and `op` failed) if the
  // socket refused it.
  bool Send(const std::shared_ptr<Operation>& op, uint32_t server, uint64_t request_id,
            std::vector<uint32_t> positions);
  // Reads the connection events of server `server`; resends what is in flight when it is back.
  void OnLinkEvents(uint32_t server);
  void Resend(uint32_t server);
  // Sends what is in flight to `server` (which holds no partition any more) to the new owners.
  void RerouteInFlight(uint32_t server);
  void OnReply(Frame payload);
  void Fail(const std::shared_ptr<Operation>& op, Status status);
  void HeartbeatLoop();
  void ExpireDeadlines();
  // Dispatches the retries that are due.
  void SendDueRetries();
  Status RefreshRouting();
  Status EnsureServerSockets();

  const ClientOptions options_;
  Context context_;
  uint32_t trainer_id_ = 0;
  uint64_t start_clock_ = 0;
  std::vector<TableSpec> tables_;

  mutable std::mutex routing_mutex_;  // guards routing_ (written by the I/O thread only)
  RoutingTable routing_;

  std::mutex submit_mutex_;  // guards submissions_ and wake_sender_
  std::deque<std::shared_ptr<Operation>> submissions_;
  Socket wake_sender_;
  Socket wake_receiver_;

  std::mutex control_mutex_;  // serialises Barrier, clock and apply calls
  std::unique_ptr<RpcChannel> control_channel_;
  // For CallEveryServer: by server id, under control_mutex_.
  std::vector<std::unique_ptr<RpcChannel>> apply_channels_;

  const uint64_t sender_id_;  // random, never 0

  // Owned by the I/O thread.
  std::unique_ptr<RpcChannel> routing_channel_;
  std::vector<ServerLink> links_;  // by server id
  uint64_t links_made_ = 0;        // names each link's monitor endpoint
  // By request id, ascending: the first is the lowest still in flight.
  std::map<uint64_t, InFlight> in_flight_;
  std::vector<std::shared_ptr<Operation>> active_;
  // Sub-requests a server asked to retry (its partition is being handed over), due at `at`.
  struct Retry {
    std::chrono::steady_clock::time_point at;
    std::shared_ptr<Operation> op;
    std::vector<uint32_t> positions;
  };
  std::vector<Retry> retries_;
  uint64_t next_request_id_ = 1;
  std::atomic<uint64_t> resent_{0};

  std::atomic<bool> stopping_{false};
  std::thread io_thread_;

  std::mutex heartbeat_mutex_;  // with heartbeat_wake_: stops the heartbeat thread promptly
  std::condition_variable heartbeat_wake_;
  std::thread heartbeat_thread_;
};

}  // namespace ember::ps
