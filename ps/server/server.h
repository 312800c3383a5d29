// Server: one parameter-server process's network side around a ShardService.
//
// It binds a ROUTER data socket, registers that endpoint with the scheduler (which answers, once
// every expected server has registered, with the server's id, the table specs and the routing
// table), then serves requests with a pool of worker threads: the ROUTER feeds an in-process
// DEALER that load-balances whole requests over the workers, each of which decodes, executes and
// answers its request independently. With one worker thread, Run()'s thread serves each pull,
// push, lookup and hint as it reads it: the hand-over to a worker and back costs more CPU than
// the forwarding saves when there is nothing to balance. The other kinds, a checkpoint that may
// take long among them, still go to the worker. Every socket queues at most
// limits.socket_queue messages per connection and direction: when every worker's queue is full
// (or the one serving thread is busy), the server stops reading requests until one has room (the
// peers' queues then fill, and their sends fail), and a reply its peer's queue has no room for is
// dropped and counted (the peer's request times out).
//
// With a data directory, the server keeps its rows in a RocksDB instance there (rows beyond the
// memory budget, and every acknowledged push when durability is ack or sync) and records its id
// and endpoint, and which pushes it applied (ps/push_ledger.h; logged in the same write as each
// push's rows). Started again on the same directory, it binds the recorded endpoint (so clients'
// connections come back by themselves, and clients resend what was in flight), checks that the
// scheduler gives it its old id back, and serves the rows it had, answering a resent push it had
// already applied without applying it again.
//
// A mover thread (ps/server/partition_mover.h) heartbeats to the scheduler and runs the partition
// moves it orders: with `join` the server registers with a formed cluster and receives a fair
// share of partitions; a drained server stops by itself once everything moved off it.
//
// Lifecycle: Start() (blocking until registered), then Run() until Stop() is called from any
// thread or signal handler context via RequestStop().
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/transport.h"
#include "embedding/memory_budget.h"
#include "embedding/rocks_store.h"
#include "ps/server/durability.h"
#include "ps/server/partition_mover.h"
#include "ps/server/shard_service.h"

namespace ember::ps {

struct ServerOptions {
  std::string scheduler_endpoint;           // e.g. tcp://127.0.0.1:7000
  std::string bind = "tcp://127.0.0.1:*";   // data socket; '*' picks a free port
  // HOST[:PORT] others connect to, when the bind address is not it (common/advertised_endpoint.h).
  std::string advertise;
  uint32_t worker_threads = 0;              // 0: DefaultWorkerThreads()
  Millis register_timeout{60'000};          // give up if the cluster does not form in time
  std::string data_dir;                     // empty: rows in memory only, nothing survives
  uint64_t memory_budget_bytes = 0;         // rows in memory at most (needs data_dir); 0: no limit
  // Disk bytes of the cold row files (embedding/cold_row_file.h) of a server with a memory budget,
  // shared evenly by its tables; unset: four times the memory budget; 0: none.
  std::optional<uint64_t> cold_file_bytes;
  Durability durability = Durability::kAck;
  Millis expiry_sweep{10'000};              // how often rows past a table's TTL are deleted
  bool join = false;                        // join a formed cluster and take a share of it
  Millis heartbeat_interval{200};           // to the scheduler, which answers with move orders
  uint64_t move_bandwidth = 0;              // bytes/s of partition copies this server receives
  TransportSecurity security;               // keys (common/transport_security.h); none: plain
  ShardPolicy policy;  // limits on what peers send (and the sockets' queues), non-finite policy
};

// Worker threads for a server that shares the machine's cores with `servers_on_machine - 1`
// others: one core per server is left to ZeroMQ's I/O thread, which streams the replies out while
// the workers look up rows (a worker on every core starves it: on 2 cores, 2 workers let the
// requests behind the first two wait until those were served). At least 1.
uint32_t DefaultWorkerThreads(uint32_t servers_on_machine = 1);

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, registers and starts the workers. Returns once the server is serving.
  Status Start();
  // Serves until RequestStop(); then stops the workers and closes the sockets.
  void Run();
  // Safe from any thread (also a signal handler: it only stores an atomic flag).
  void RequestStop() { stop_requested_.store(true, std::memory_order_relaxed); }
  // The flag RequestStop() sets, for a signal handler to set directly.
  std::atomic<bool>* stop_flag() { return &stop_requested_; }

  const std::string& endpoint() const { return endpoint_; }
  // Worker threads it serves with (ServerOptions::worker_threads, or the default for 0).
  uint32_t worker_threads() const { return options_.worker_threads; }
  // With one worker thread, Run()'s thread serves the pulls, pushes, lookups and hints it reads
  // itself; the other requests still go to the worker.
  bool serves_requests_itself() const { return options_.worker_threads == 1; }
  uint32_t server_id() const { return service_->server_id(); }
  const ShardService& service() const { return *service_; }

 private:
  Status Register();
  // Reads the endpoint recorded in the data directory, if any.
  std::string RecordedEndpoint() const;
  // Records id and endpoint in the data directory, or checks them against the recorded ones.
  Status RecordIdentity(uint32_t server_id);
  // Opens the data directory's row store for `tables` (no-op without a data directory).
  Result<ShardStorage> OpenStorage(const std::vector<TableSpec>& tables);
  // Moves one reply from a worker (through `lane`) to its peer; counts one dropped for a full
  // queue.
  void ForwardReply(Socket& lane);
  // Serves requests arriving on `socket` (connected to the dispatcher) until Shutdown().
  void WorkerLoop(Socket& socket);
  // The reply to `frames` ([peer] [routing identity] [delimiter?] payload, at least 3 frames).
  std::vector<Frame> Answer(std::vector<Frame>& frames);
  // Sends `reply` on `socket`; a reply the peer's queue has no room for is dropped and counted.
  void SendReply(Socket& socket, std::vector<Frame>& reply);
  // Deletes expired rows every options_.expiry_sweep until Shutdown().
  void ExpiryLoop();
  void Shutdown();

  ServerOptions options_;  // worker_threads resolved (never 0)
  Context context_;
  Socket frontend_;  // ROUTER, peers connect here
  Socket backend_;   // DEALER, inproc fan-out to workers
  // DEALER, inproc to the readers' worker: requests from reader keys (lookups, serving replicas'
  // follow streams) are served by a worker of their own at the lowest CPU priority (nice 19), so
  // serving traffic takes a training server's cores only when training leaves them idle.
  Socket readers_backend_;
  std::string endpoint_;        // advertised: what the scheduler and clients know it by
  std::string bound_endpoint_;  // what the data socket is bound at (recorded in the data dir)
  std::string backend_endpoint_;
  // Declared before service_, which borrows them.
  std::unique_ptr<embedding::MemoryBudget> budget_;
  std::unique_ptr<embedding::RocksStore> store_;
  std::unique_ptr<ShardService> service_;
  std::vector<std::thread> workers_;
  std::thread expiry_thread_;  // only when a table has a TTL
  std::unique_ptr<PartitionMover> mover_;
  std::thread mover_thread_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> workers_stop_{false};
  bool started_ = false;
};

}  // namespace ember::ps
