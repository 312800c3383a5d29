// Scheduler: cluster membership, the routing table and barriers, served from one thread.
//
// Servers register their data endpoints; once the expected number has registered, the scheduler
// builds the routing table (epoch 1, partitions spread evenly) and answers every waiting server
// and trainer with its id, the table specs and the routing table. Later it hands out the current
// routing table on request and releases barriers when enough participants arrived. It keeps the
// trainers' clocks (TrainerClocks): in a bsp or ssp run a clock report is answered once the
// trainer may start its next step (in asp at once), and silent trainers are declared dead. It
// also runs checkpoint cuts (CheckpointCuts): periodic ones and those `ember checkpoint` asks
// for are announced in clock grants, and the trainers meet at them. After the cluster formed,
// servers heartbeat and get their orders in the answer; a server may join (`--join`) or be
// drained, and ShardMoves plans the partition moves, which the target servers run and commit
// (in scheduler_moves.cc); each commit bumps the routing epoch.
// With a data directory it survives its own death (scheduler_state.h): it writes what it must
// remember there before any answer that depends on it leaves (answers wait in an outbox for that),
// and, started again on the same directory, binds the same endpoint and goes on; servers and
// trainers ask again until it answers, and it treats a request sent again as the same request.
//
// Every request gets an answer (an error naming the problem for anything it cannot do); nothing a
// peer sends stops the loop. What peers make it hold is bounded (SchedulerOptions::limits):
// registered trainers, open barriers and their names' length, and requests waiting for their
// answer (barrier participants, clock reports, registrations before the cluster forms, cut and
// checkpoint requests); one more is refused with ResourceExhausted naming the limit and counted
// in the cluster status.
#pragma once

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/grant_signature.h"
#include "common/limits.h"
#include "common/peer.h"
#include "common/routing_table.h"
#include "common/status.h"
#include "common/sync_options.h"
#include "common/table_spec.h"
#include "common/transport.h"
#include "common/wire.h"
#include "scheduler/barriers.h"
#include "scheduler/checkpoint_cuts.h"
#include "scheduler/shard_moves.h"
#include "scheduler/trainer_clocks.h"

namespace ember::scheduler {

class SchedulerMetrics;
struct SchedulerSnapshot;
struct SchedulerState;

struct SchedulerOptions {
  std::string bind = "tcp://127.0.0.1:*";
  uint32_t num_servers = 1;
  uint32_t num_partitions = 1024;
  std::vector<TableSpec> tables;
  SyncOptions sync;  // asp: clocks are kept for checkpoint cuts only; nobody waits
  PeriodicCheckpoints checkpoints;  // every 0: only cuts `ember checkpoint` asks for
  Millis server_timeout{10'000};    // a server silent this long (no heartbeat) is dead
  uint32_t moves_per_server = 4;    // partition moves a target server runs at a time
  TransportSecurity security;       // keys (common/transport_security.h); none: plain
  std::string data_dir;             // where its state survives a restart; empty: memory only
  Limits limits;  // tables, trainers, barriers, waiters, and its socket's queues
};

class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Validates the options, restores the state saved in data_dir (if any) and binds.
  Status Start();
  void Run();      // serves until RequestStop(), or until its state cannot be saved
  // Why Run() stopped by itself: its state could not be written to data_dir. OK otherwise.
  const Status& failure() const { return failure_; }
  void RequestStop() { stop_requested_.store(true, std::memory_order_relaxed); }
  // The flag RequestStop() sets, for a signal handler to set directly.
  std::atomic<bool>* stop_flag() { return &stop_requested_; }

  const std::string& endpoint() const { return endpoint_; }
  // Publishes a snapshot to `metrics` after every turn of Run()'s loop (scheduler_metrics.h).
  // Borrowed: it must outlive Run(). Call before Run().
  void set_metrics(SchedulerMetrics* metrics) { metrics_ = metrics; }

  // Handles one message from `peer` as the loop received it: the sender's identity frame, then
  // the request frame. Answers go out on the bound socket (Start). Run() calls it for every
  // message; tests and fuzzers call it directly, on the thread that would run the loop.
  void HandleMessage(std::vector<Frame> frames, const Peer& peer);

 private:
  // A request whose answer waits for something (all servers, a barrier).
  struct Waiter {
    Frame identity;
    uint64_t request_id = 0;
    uint32_t member_id = 0;  // server or trainer id
    uint64_t clock = 0;      // clock waiters: the clock the trainer completed
  };

  // HandleMessage but for sending the answers.
  void HandleRequest(std::vector<Frame> frames, const Peer& peer);
  // Answers barrier arrivals (released, refused or expired).
  void AnswerBarriers(std::vector<Barriers::Answer> answers);
  // Runs the handler of one decoded request; HandleMessage answers an exception escaping it.
  void Dispatch(Frame identity, const wire::DecodedRequest& request, const Peer& peer);
  // In scheduler_senders.cc: PermissionDenied when an authenticated `peer` speaks for a server
  // or trainer that registered with another key.
  Status CheckMember(const wire::RequestBody& body, const Peer& peer) const;
  bool IsServerKey(uint32_t server, const Peer& peer) const;
  void HandleRegisterServer(Frame identity, uint64_t request_id,
                            const wire::RegisterServerRequest& registration, const Peer& peer);
  // In scheduler_moves.cc.
  void HandleServerHeartbeat(const Frame& identity, uint64_t request_id, uint32_t server);
  void HandleMoveDecision(const Frame& identity, uint64_t request_id,
                          const wire::MoveDecisionRequest& decision);
  void HandleDrain(const Frame& identity, uint64_t request_id, uint32_t server);
  void HandleClusterStatus(const Frame& identity, uint64_t request_id);
  void HandleRegisterTrainer(Frame identity, uint64_t request_id, const std::string& name,
                             const Peer& peer);
  void HandleRegisterReader(const Frame& identity, uint64_t request_id, const std::string& name,
                            const Peer& peer);
  void HandleBarrier(Frame identity, uint64_t request_id, const wire::BarrierRequest&);
  void HandleTrainerClock(Frame identity, uint64_t request_id,
                          const wire::TrainerClockRequest& clock);
  void HandleHeartbeat(const Frame& identity, uint64_t request_id, uint32_t trainer);
  void HandleCheckpointCut(Frame identity, uint64_t request_id,
                           const wire::CheckpointCutRequest& cut);
  void HandleCheckpointNow(Frame identity, uint64_t request_id,
                           const wire::CheckpointNowRequest& now);
  // Hands the active cut to its coordinator once everyone arrived; fails it when it timed out;
  // fails a requested cut nobody is left to reach.
  void ServeCut();
  // Ends the active cut: answers the trainers waiting at it and, for a requested cut, its
  // requester, with `outcome`.
  void FinishCut(const Status& outcome);
  // Answers every clock waiter that may proceed (or must fail) now.
  void ServeClockWaiters();
  void FormCluster();
  // Queues an answer; SendReplies() sends it once the state it reflects is saved.
  void Reply(const Frame& identity, Frame payload);
  // In scheduler_persistence.cc: saves the state (flushed to disk) if more than clocks changed,
  // then sends the queued answers. A state that cannot be saved stops the scheduler (failure())
  // without answering: nothing is promised that a restart would forget.
  void SendReplies();
  SchedulerState CurrentState() const;
  // Takes over the state saved in data_dir, if there is one; the endpoint to bind.
  Result<std::string> RestoreState();
  // A cut arrival or finish for the cut that already ended (sent again after a restart):
  // answers it with that cut's outcome and returns true.
  bool AnswerEndedCut(const Frame& identity, uint64_t request_id,
                      const wire::CheckpointCutRequest& cut);
  // Answers a request refused for `limit` (of `value`) and counts it.
  void RefuseForLimit(const Frame& identity, uint64_t request_id, Limit limit, uint64_t value,
                      const std::string& what);
  // Whether one more request may wait for its answer; when not, refuses it (waiters limit).
  bool AdmitWaiter(const Frame& identity, uint64_t request_id, const std::string& what);
  // Requests waiting for their answer, over every kind.
  size_t WaitersQueued() const;
  wire::Registration RegistrationFor(uint32_t member_id) const;
  // In scheduler_metrics.cc: what the metrics show of the state now.
  SchedulerSnapshot MetricsSnapshot() const;

  const SchedulerOptions options_;
  Context context_;
  Socket socket_;  // ROUTER
  std::string endpoint_;
  std::atomic<bool> stop_requested_{false};
  std::vector<std::pair<Frame, Frame>> outbox_;  // answers (identity, payload) not yet sent
  std::string saved_structure_;  // the state last written to data_dir, without its clocks
  Status failure_;

  RoutingTable routing_;  // epoch 0 until every server registered
  std::vector<ServerInfo> servers_;
  std::map<std::string, uint32_t> trainer_ids_;
  std::map<uint32_t, std::string> trainer_keys_;  // the key each trainer registered with
  std::vector<Waiter> waiting_servers_;
  std::vector<Waiter> waiting_trainers_;
  Barriers barriers_;
  TrainerClocks clocks_;
  std::vector<Waiter> clock_waiters_;
  CheckpointCuts cuts_;
  std::vector<Waiter> cut_waiters_;        // trainers arrived at the active cut
  std::vector<Waiter> checkpoint_waiters_; // `ember checkpoint` requests, answered at the end
  uint32_t cut_coordinator_ = 0;
  ShardMoves moves_;
  LimitCounters limits_hit_;
  // Signs bsp clock grants for the servers (with authentication; none without).
  std::optional<GrantSigner> grant_signer_;
  uint64_t cuts_completed_ = 0;  // checkpoint cuts that ended well
  uint64_t cuts_failed_ = 0;
  uint64_t last_cut_clock_ = 0;  // the last cut that ended (0: none), and its outcome
  Status last_cut_outcome_;
  SchedulerMetrics* metrics_ = nullptr;  // borrowed; null: no metrics
};

}  // namespace ember::scheduler
