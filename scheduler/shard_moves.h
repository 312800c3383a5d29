// ShardMoves: the scheduler's bookkeeping of servers after the cluster formed (joins, drains,
// liveness) and of the partition moves that follow from them.
//
// A server that joins a formed cluster, or one asked to drain, changes the set of servers that
// should hold partitions; the moves PlanRebalance gives are queued. Each move is run by its
// target server, which learns its tasks in the answer to its heartbeat (at most
// `moves_per_server` at a time, so a join does not flood the cluster), but only once the source
// has learnt the move from its own heartbeat's answer (MovesOutOf, which lists the moves out of
// a server both in flight and planned, so that a move is usually known to its source before it
// starts): a source takes part in no move that the scheduler did not name to it first. The
// target copies the partition
// from the source while the source serves, takes the hand-over (the source holds the partition
// for the moment it takes to send what changed since the copy) and commits. The scheduler
// decides every move exactly once: Commit (by the target) or Abort (by the source, whose hand-over
// waited too long, or by the target after a failure), whichever comes first; a move aborted is
// planned again at the next heartbeat. A server silent for `server_timeout` is dead: its moves
// are aborted and it gets no new ones; started again with its data directory it comes back.
// A draining server whose partitions have all moved may exit (its heartbeat answer says so).
//
// Pure bookkeeping with time passed in; not thread-safe (the scheduler's one thread uses it).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/routing_table.h"
#include "common/status.h"
#include "scheduler/rebalance.h"

namespace ember::scheduler {

enum class ServerState { kLive, kDraining, kDrained, kDead };
std::string_view ServerStateName(ServerState state);

class ShardMoves {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  ShardMoves(std::chrono::milliseconds server_timeout, uint32_t moves_per_server)
      : server_timeout_(server_timeout), moves_per_server_(moves_per_server) {}

  // The servers of the formed cluster, all live.
  void Start(uint32_t servers, TimePoint now);
  // A server joining the formed cluster: its id (the next one). Plans moves towards it.
  uint32_t Join(const RoutingTable& routing, TimePoint now);
  // Plans moving every partition off `server`. NotFound for an unknown server,
  // FailedPrecondition for a dead one or when it is the last server holding partitions.
  Status Drain(uint32_t server, const RoutingTable& routing);
  // A sign of life. A dead server that heartbeats again (restarted on its data directory) is
  // live again. NotFound for an unknown server.
  Status Heartbeat(uint32_t server, TimePoint now);
  // Declares dead every live or draining server that has heartbeated but has been silent for
  // longer than server_timeout since, aborting their moves; returns their ids.
  std::vector<uint32_t> ExpireSilent(TimePoint now);

  // The moves `server` should run now: its moves in flight (topped up from the plan) whose source
  // was told of them.
  std::vector<PartitionMove> TasksFor(uint32_t server, const RoutingTable& routing);
  // The moves out of `server`, in flight and planned, of which it is told by this answer: from
  // now on their targets get them as tasks (until the next answer to it lists them no more).
  struct MovesOut {
    std::vector<PartitionMove> in_flight;
    std::vector<PartitionMove> planned;
  };
  MovesOut MovesOutOf(uint32_t server);
  // The target finished the move: the caller sets owners[p] = to and bumps the epoch.
  // FailedPrecondition when the move is not in flight (aborted, or never started).
  Status Commit(const PartitionMove& move);
  // Drops the move in flight (the source's hand-over timed out, or the target failed); it is
  // planned again later. No-op when it was not in flight. The source, which does not know the
  // target, passes kAnyTarget.
  static constexpr uint32_t kAnyTarget = UINT32_MAX;
  void Abort(const PartitionMove& move, const Status& why);
  // Whether `server` drained: it asked to, and holds no partition any more (marks it drained).
  bool DrainedNow(uint32_t server, const RoutingTable& routing);

  ServerState state(uint32_t server) const { return servers_.at(server).state; }
  size_t server_count() const { return servers_.size(); }
  size_t moves_in_flight() const { return in_flight_.size(); }
  size_t moves_planned() const { return planned_.size(); }
  uint64_t moves_done() const { return done_; }

  // What a restarted scheduler needs (scheduler/scheduler_state.h): each server's state, the
  // moves in flight (their targets may still commit them) and the count of moves done. The plan
  // is made again from the routing table, and sources are told their moves again.
  struct Saved {
    std::vector<ServerState> states;  // by server id
    std::vector<PartitionMove> in_flight;
    uint64_t done = 0;
  };
  Saved Save() const;
  // Replaces everything with `saved`; every server counts as heard from at `now`, so one that
  // does not heartbeat within server_timeout of the restart is declared dead.
  void Restore(const Saved& saved, const RoutingTable& routing, TimePoint now);

 private:
  struct Server {
    ServerState state = ServerState::kLive;
    TimePoint last_seen;
    bool heard = false;  // has heartbeated: only such servers can be declared dead
  };
  // Re-plans the moves not in flight from the routing table and the servers that should hold
  // partitions (live or dead, not draining or drained: a dead server's partitions stay with it
  // until it comes back or is replaced).
  void Replan(const RoutingTable& routing);

  const std::chrono::milliseconds server_timeout_;
  const uint32_t moves_per_server_;
  std::vector<Server> servers_;
  std::vector<PartitionMove> planned_;        // not started
  std::map<uint32_t, PartitionMove> in_flight_;  // by partition
  // By source server: the moves (partition, target) its last heartbeat's answer listed.
  std::map<uint32_t, std::set<std::pair<uint32_t, uint32_t>>> told_;
  uint64_t done_ = 0;
};

}  // namespace ember::scheduler
