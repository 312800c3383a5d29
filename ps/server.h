// Server: one parameter-server process's network side around a ShardService.
//
// It binds a ROUTER data socket, registers that endpoint with the scheduler (which answers, once
// every expected server has registered, with the server's id, the table specs and the routing
// table), then serves requests with a pool of worker threads: the ROUTER feeds an in-process
// DEALER that load-balances whole requests over the workers, each of which decodes, executes and
// answers its request independently.
//
// Lifecycle: Start() (blocking until registered), then Run() until Stop() is called from any
// thread or signal handler context via RequestStop().
#pragma once

#include <zmq.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/transport.h"
#include "ps/shard_service.h"

namespace ember::ps {

struct ServerOptions {
  std::string scheduler_endpoint;           // e.g. tcp://127.0.0.1:7000
  std::string bind = "tcp://127.0.0.1:*";   // data socket; '*' picks a free port
  uint32_t worker_threads = 2;
  Millis register_timeout{60'000};          // give up if the cluster does not form in time
};

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
  uint32_t server_id() const { return service_->server_id(); }
  const ShardService& service() const { return *service_; }

 private:
  Status Register();
  // Serves requests arriving on `socket` (connected to the dispatcher) until Shutdown().
  void WorkerLoop(uint32_t worker, zmq::socket_t& socket);
  void Shutdown();

  const ServerOptions options_;
  zmq::context_t context_;
  zmq::socket_t frontend_;  // ROUTER, peers connect here
  zmq::socket_t backend_;   // DEALER, inproc fan-out to workers
  std::string endpoint_;
  std::string backend_endpoint_;
  std::unique_ptr<ShardService> service_;
  std::vector<std::thread> workers_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> workers_stop_{false};
  bool started_ = false;
};

}  // namespace ember::ps
