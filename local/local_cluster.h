// LocalCluster: a scheduler and N parameter servers on loopback, each on its own threads inside
// this process. `ember bench` runs against one, and so do the tests that need a real cluster
// without spawning processes.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/sync_options.h"
#include "common/table_spec.h"
#include "ps/client/client.h"
#include "ps/server/server.h"
#include "scheduler/scheduler.h"

namespace ember::local {

struct LocalClusterOptions {
  uint32_t num_servers = 1;
  uint32_t num_partitions = 64;
  uint32_t worker_threads = 0;  // per server; 0: ps::DefaultWorkerThreads(num_servers)
  Millis register_timeout{30'000};
  SyncOptions sync;                            // the scheduler's clocks and their gating
  scheduler::PeriodicCheckpoints checkpoints;  // the scheduler's periodic cuts (every 0: none)
  ps::ShardPolicy policy;  // every process's limits, and the servers' non-finite policy
  // CurveZMQ between every process of the cluster, with key pairs made for it in memory: one for
  // the scheduler, one all its servers share, an admin pair for its clients, and a trainer pair.
  bool authenticate = false;
  // Non-empty: server i keeps its rows in DATA_DIR/server-i (RocksDB, durability ack), holding
  // at most memory_budget_bytes of them in memory (0: no limit).
  std::string data_dir;
  uint64_t memory_budget_bytes = 0;
};

class LocalCluster {
 public:
  // Starts the scheduler and the servers and returns once every server serves; status() says
  // whether that worked.
  LocalCluster(std::vector<TableSpec> tables, LocalClusterOptions options);
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  Status status() const { return status_; }
  const std::string& scheduler_endpoint() const { return scheduler_->endpoint(); }
  ps::Server& server(size_t i) { return *servers_[i]; }
  size_t num_servers() const { return servers_.size(); }
  // The threads the servers started (workers, forwarding loops, ZeroMQ I/O), whose CPU time is
  // the servers' cost.
  const std::vector<pid_t>& server_thread_ids() const { return server_thread_ids_; }

  // Starts one more server that joins the formed cluster (it receives a fair share of the
  // partitions as its moves commit); returns its id.
  Result<uint32_t> AddServer();

  // What a client of this cluster connects with: the admin key pair and the scheduler's key when
  // it authenticates, else nothing.
  const TransportSecurity& client_security() const { return client_security_; }
  // The key pair its servers share, and a trainer and a reader key pair it trusts (when it
  // authenticates): what an insider with such a key holds, for tests of what it cannot do.
  const TransportSecurity& server_security() const { return server_security_; }
  const TransportSecurity& trainer_security() const { return trainer_security_; }
  const TransportSecurity& reader_security() const { return reader_security_; }

  // A client of this cluster registered under `name`, with the cluster's limits and keys.
  Result<std::unique_ptr<ps::Client>> Connect(const std::string& name = "client") const;
  // A client with these options (its limits, and its keys if it has any, as given), pointed at
  // this cluster's scheduler.
  Result<std::unique_ptr<ps::Client>> Connect(ps::ClientOptions options) const;

 private:
  // Worker threads of each server: options_.worker_threads, or the default for this machine.
  uint32_t WorkerThreads() const;
  Status Start(std::vector<TableSpec> tables);
  // Makes the key pairs of `authenticate`.
  Status MakeKeys();
  // The options of the next server started (its index is servers_.size()).
  ps::ServerOptions ServerOptionsFor(bool join) const;

  const LocalClusterOptions options_;
  Status status_;
  TransportSecurity scheduler_security_, server_security_, client_security_, trainer_security_,
      reader_security_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;
  std::thread scheduler_thread_;
  std::vector<std::unique_ptr<ps::Server>> servers_;
  std::vector<std::thread> server_threads_;
  std::vector<pid_t> server_thread_ids_;
};

}  // namespace ember::local
