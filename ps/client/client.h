// Client: batched, asynchronous pull and push of embedding rows against a sharded cluster, and
// the calls that go to every server at once (apply a clock, checkpoints, stats).
//
// A client registers with the scheduler as a trainer (getting the table specs and the routing
// table), then splits every batch by owning server (and a large share into messages of at most
// max_keys_per_message keys) and sends the pieces to all servers at once from one I/O thread.
// Pull and Push return a Ticket at once, so a trainer can overlap the network with compute. A
// server that answers "not my partition" makes the client refresh its routing from the scheduler
// and resend just those keys; one that answers "retry" (Unavailable: a partition being handed
// over to another server) gets those keys again a few milliseconds later, routed afresh; every
// operation has a deadline.
//
// Servers that die and come back: the client watches each server connection. Requests sent
// while a server is down wait in the connection's queue and go out when it is back; when the
// connection comes back after being lost, every pull and push still in flight to that server is
// sent again with its request id, since the server may never have seen it or its answer may have
// been lost. A pull is simply answered twice (the later answer is ignored); a push carries the
// client's sender id (random, one per Client) and the lowest request id it still has in flight,
// so that the server applies it once however many copies arrive (ps/server/push_ledger.h). The
// operation's deadline (request_timeout) still bounds the wait: a server that does not come back
// in time fails it with DeadlineExceeded naming the server.
//
// The calls to every server (ApplyClock, Checkpoint, Stats) travel on the same connections,
// from the same I/O thread, and block their caller until every server answered, the first error
// or the deadline. They are not sent again after a reconnection: one whose request or answer was
// lost fails at its deadline.
//
// The scheduler's calls (clocks, cuts, barriers) are the SchedulerClient's: scheduler() lends
// the one this client registered with.
//
// Lookup is a pull that changes nothing on the servers, for serving systems: it travels, splits,
// retries and fails exactly as a pull does.
//
// A pull may ask for several tables at once: each server gets one request for its share of all
// of them.
//
// Thread-safety: all public methods may be called from any thread. The spans passed to Pull, Lookup
// and Push are borrowed: keep them alive and unchanged until the ticket completes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/transport_security.h"
#include "common/checkpoint_layout.h"
#include "common/limits.h"
#include "common/millis.h"
#include "common/missing_rows.h"
#include "common/routing_table.h"
#include "common/row_format.h"
#include "common/server_stats.h"
#include "common/status.h"
#include "common/sync_options.h"
#include "common/table_spec.h"
#include "ps/client/scheduler_client.h"
#include "ps/client/ticket.h"

namespace ember::ps {

struct ClientOptions {
  std::string scheduler_endpoint;
  std::string name = "trainer";
  Millis request_timeout{30'000};          // a pull or push not answered by then fails
  Millis register_timeout{60'000};         // waiting for the cluster to form
  uint32_t max_routing_retries = 8;        // stale-routing resends per operation
  RowFormat row_format = RowFormat::kF32;  // rows and gradients on the wire
  // A server's share of a batch larger than this goes as several messages, all sent at once, so
  // the server's threads work on them in parallel while earlier replies are on the wire.
  uint32_t max_keys_per_message = 4096;
  // The job's limits (the `limits:` section): Connect refuses a max_keys_per_message above
  // limits.keys_per_message, and the client's sockets queue at most limits.socket_queue messages.
  Limits limits;
  Millis heartbeat_interval{0};  // > 0: tell the scheduler this often that the trainer lives
  // Register as a reader (serving, `ember lookup`): the client may only look rows up and read the
  // routing table and status. It takes no trainer slot, sends no heartbeats and has no trainer
  // id (trainer_id() is wire::kReaderId); a reader key needs it.
  bool read_only = false;
  TransportSecurity security;    // this process's key and the scheduler's (none: plain)
};

// One table's share of a pull of several tables: the rows of `keys` go to `out`
// (keys.size() rows of the table's dim).
struct TablePull {
  std::string_view table;
  std::span<const uint64_t> keys;
  std::span<float> out;
};

class Client {
 public:
  static Result<std::unique_ptr<Client>> Connect(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  uint32_t trainer_id() const;  // wire::kReaderId for a read-only client
  bool read_only() const;       // registered as a reader (ClientOptions::read_only)
  // The clock this trainer starts from (non-zero for a late joiner of a bsp/ssp run).
  uint64_t start_clock() const;
  // How the run synchronises its trainers' steps, as the scheduler said at registration (mode,
  // staleness, combine, trainers, clock_timeout).
  const SyncOptions& sync() const;
  const std::vector<TableSpec>& tables() const;
  Result<const TableSpec*> FindTable(std::string_view name) const;
  RoutingTable routing() const;
  // The scheduler this client registered with; lives as long as the client.
  SchedulerClient& scheduler();

  // Fills out[i*dim .. (i+1)*dim) with the row of keys[i] (created on first pull).
  Ticket Pull(std::string_view table, std::span<const uint64_t> keys, std::span<float> out);
  // One pull of several tables (at most wire::kMaxTablesPerPull; a table may come more than
  // once): each server gets one request for its keys of all of them, as a step of a model with
  // several tables needs. Fails as a whole: an unknown table or a wrong `out` fails it at once.
  Ticket Pull(std::span<const TablePull> tables);
  // Reads the rows of keys into out[i*dim .. (i+1)*dim) without changing anything on the
  // servers (serving): no row is created, no optimizer state touched. A key without a row gets
  // the table's initial row (MissingRows::kInitial, computed, not stored) or zeros (kFlag).
  // `found`, keys.size() bytes (or empty, in kInitial mode only), gets 1 for each key with a row
  // and 0 for each without. Routed, split and retried as a pull.
  Ticket Lookup(std::string_view table, std::span<const uint64_t> keys, std::span<float> out,
                MissingRows missing = MissingRows::kInitial, std::span<uint8_t> found = {});
  // Applies one gradient row per key with the table's server-side optimizer. Keys should be
  // unique (sum duplicates first); `clock` is the trainer's step. `deferred` (bsp): the servers
  // hold the push until ApplyClock(clock) instead of applying it on arrival.
  // `release_hint` (non-zero): the Hint that announced these keys, whose pins the servers drop.
  // `learning_rate` > 0: the servers apply it in place of the table's (a trainer's schedule; in
  // bsp every push of one clock to one table must carry the same); 0: the table's own.
  Ticket Push(std::string_view table, std::span<const uint64_t> keys,
              std::span<const float> gradients, uint64_t clock = 0, bool deferred = false,
              uint64_t release_hint = 0, float learning_rate = 0);
  // Look-ahead: tells the servers that `keys` of `table` will be pulled and pushed a few steps
  // from now, under `hint` (non-zero, one per batch of this client), so that a tiered server
  // reads their rows into memory in the background and pins them until the push naming the hint
  // (release_hint) or `lifetime` passes. The keys are copied. The ticket completes once every
  // server queued its share (ResourceExhausted when one's queue of hints was full). Advisory:
  // nothing but speed depends on it.
  Ticket Hint(std::string_view table, std::span<const uint64_t> keys, uint64_t hint,
              Millis lifetime);

  // ---- Calls to every server ----
  // Errors carry the server's endpoint; the first one ends the call.
  //
  // Asks every server to apply the deferred pushes of `clock` from `trainers` (the clock's
  // grant), combined by `combine`; returns once all did. `signature` is the grant's, from the
  // scheduler: servers with keys apply only what it signed.
  Status ApplyClock(uint64_t clock, std::span<const uint32_t> trainers, Combine combine,
                    Millis timeout, const std::string& signature = "");
  // Asks every server to write, verify or load its checkpoint files in `dir`, absolute as the
  // servers see it (ps/client/checkpoint.h has the steps around it); returns once all did.
  // `write` says how a cut is written (kWrite only).
  Status Checkpoint(const std::string& dir, CheckpointAction action, Millis timeout,
                    const CutWrite& write = {});
  // Counters and table sizes of every server, in server-id order.
  Result<std::vector<ServerStats>> Stats(Millis timeout = Millis(10'000));

  // The id servers know this client's pushes by (random, never 0).
  uint64_t sender_id() const;
  // Requests sent again after a connection to their server came back.
  uint64_t requests_resent() const;

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace ember::ps
