// Scheduler: cluster membership, the routing table and barriers, served from one thread.
//
// Servers register their data endpoints; once the expected number has registered, the scheduler
// builds the routing table (epoch 1, partitions spread evenly) and answers every waiting server
// and trainer with its id, the table specs and the routing table. Later it hands out the current
// routing table on request and releases barriers when enough participants arrived. In a bsp or
// ssp run it also keeps the trainers' clocks (TrainerClocks): a clock report is answered once
// the trainer may start its next step, and silent trainers are declared dead.
//
// Every request gets an answer (an error naming the problem for anything it cannot do); nothing a
// peer sends stops the loop.
#pragma once

#include <zmq.hpp>

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "common/routing_table.h"
#include "common/status.h"
#include "common/sync_options.h"
#include "common/table_spec.h"
#include "common/transport.h"
#include "common/wire.h"
#include "scheduler/trainer_clocks.h"

namespace ember::scheduler {

struct SchedulerOptions {
  std::string bind = "tcp://127.0.0.1:*";
  uint32_t num_servers = 1;
  uint32_t num_partitions = 1024;
  std::vector<TableSpec> tables;
  SyncOptions sync;  // asp: no clocks are kept
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  Status Start();  // validates the options and binds
  void Run();      // serves until RequestStop()
  void RequestStop() { stop_requested_.store(true, std::memory_order_relaxed); }
  // The flag RequestStop() sets, for a signal handler to set directly.
  std::atomic<bool>* stop_flag() { return &stop_requested_; }

  const std::string& endpoint() const { return endpoint_; }

 private:
  // A request whose answer waits for something (all servers, a barrier).
  struct Waiter {
    zmq::message_t identity;
    uint64_t request_id = 0;
    uint32_t member_id = 0;  // server or trainer id
    uint64_t clock = 0;      // clock waiters: the clock the trainer completed
  };

  void HandleMessage(std::vector<zmq::message_t> frames);
  void HandleRegisterServer(zmq::message_t identity, uint64_t request_id,
                            const std::string& endpoint);
  void HandleRegisterTrainer(zmq::message_t identity, uint64_t request_id,
                             const std::string& name);
  void HandleBarrier(zmq::message_t identity, uint64_t request_id, const wire::BarrierRequest&);
  void HandleTrainerClock(zmq::message_t identity, uint64_t request_id,
                          const wire::TrainerClockRequest& clock);
  void HandleHeartbeat(const zmq::message_t& identity, uint64_t request_id, uint32_t trainer);
  // Answers every clock waiter that may proceed (or must fail) now.
  void ServeClockWaiters();
  void FormCluster();
  void Reply(const zmq::message_t& identity, zmq::message_t payload);
  wire::Registration RegistrationFor(uint32_t member_id) const;

  const SchedulerOptions options_;
  zmq::context_t context_;
  zmq::socket_t socket_;  // ROUTER
  std::string endpoint_;
  std::atomic<bool> stop_requested_{false};

  RoutingTable routing_;  // epoch 0 until every server registered
  std::vector<ServerInfo> servers_;
  std::map<std::string, uint32_t> trainer_ids_;
  std::vector<Waiter> waiting_servers_;
  std::vector<Waiter> waiting_trainers_;
  // Barrier name -> participants (by identity bytes, so a resent request counts once).
  std::map<std::string, std::map<std::string, Waiter>> barriers_;
  TrainerClocks clocks_;
  std::vector<Waiter> clock_waiters_;
};

}  // namespace ember::scheduler
