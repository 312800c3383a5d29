// Scheduler: server heartbeats and orders, move decisions, drains and the cluster status.
#include <spdlog/spdlog.h>

#include "scheduler/scheduler.h"

namespace ember::scheduler {

void Scheduler::HandleServerHeartbeat(const Frame& identity, uint64_t request_id,
                                      uint32_t server) {
  if (!routing_.ready()) {
    Reply(identity, wire::EncodeStatusResponse(
                        request_id, routing_.epoch,
                        FailedPrecondition("the cluster has not formed yet")));
    return;
  }
  if (Status alive = moves_.Heartbeat(server, std::chrono::steady_clock::now()); !alive.ok()) {
    Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch, alive));
    return;
  }
  wire::ServerOrders orders;
  orders.routing = routing_;
  for (const PartitionMove& move : moves_.TasksFor(server, routing_)) {
    orders.moves.push_back(wire::MoveOrder{move.partition, move.from, move.to});
  }
  // After the tasks: a move this server is the source of reaches its target only once the
  // source heard of it here.
  const ShardMoves::MovesOut out = moves_.MovesOutOf(server);
  for (const PartitionMove& move : out.in_flight) {
    orders.moves_out.push_back(wire::MoveOrder{move.partition, move.from, move.to});
  }
  for (const PartitionMove& move : out.planned) {
    orders.planned_out.push_back(wire::MoveOrder{move.partition, move.from, move.to});
  }
  orders.exit = moves_.DrainedNow(server, routing_);
  Reply(identity, wire::EncodeServerOrdersResponse(request_id, orders));
}

void Scheduler::HandleMoveDecision(const Frame& identity, uint64_t request_id,
                                   const wire::MoveDecisionRequest& decision) {
  const PartitionMove move{decision.move.partition, decision.move.from, decision.move.to};
  if (move.partition >= routing_.owners.size() ||
      (move.to >= servers_.size() && move.to != ShardMoves::kAnyTarget)) {
    Reply(identity, wire::EncodeStatusResponse(
                        request_id, routing_.epoch,
                        InvalidArgument("move of partition " + std::to_string(move.partition) +
                                        " to server " + std::to_string(move.to) +
                                        " names no such partition or server")));
    return;
  }
  if (!decision.commit) {
    moves_.Abort(move, Aborted(decision.reason));
    // Whatever happened first, the routing table says who owns the partition now.
    Reply(identity, wire::EncodeRoutingResponse(request_id, routing_));
    return;
  }
  if (move.to == ShardMoves::kAnyTarget) {
    Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch,
                                               InvalidArgument("a commit must name its target")));
    return;
  }
  if (Status committed = moves_.Commit(move); !committed.ok()) {
    // A commit sent again (its answer was lost, or the scheduler restarted) finds it done.
    const bool done_before = routing_.ready() && routing_.owners[move.partition] == move.to;
    Reply(identity, done_before ? wire::EncodeRoutingResponse(request_id, routing_)
                                : wire::EncodeStatusResponse(request_id, routing_.epoch, committed));
    return;
  }
  routing_.owners[move.partition] = move.to;
  ++routing_.epoch;
  spdlog::debug("scheduler: partition {} moved from server {} to {} (epoch {})", move.partition,
                move.from, move.to, routing_.epoch);
  if (moves_.moves_in_flight() == 0 && moves_.moves_planned() == 0) {
    spdlog::info("scheduler: every planned move is done ({} in all, epoch {})",
                 moves_.moves_done(), routing_.epoch);
  }
  Reply(identity, wire::EncodeRoutingResponse(request_id, routing_));
}

void Scheduler::HandleDrain(const Frame& identity, uint64_t request_id,
                            uint32_t server) {
  Status drained = routing_.ready() ? moves_.Drain(server, routing_)
                                    : FailedPrecondition("the cluster has not formed yet");
  if (drained.ok()) {
    spdlog::info("scheduler: draining server {}: {} partition moves planned", server,
                 moves_.moves_planned());
  }
  Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch, drained));
}

void Scheduler::HandleClusterStatus(const Frame& identity, uint64_t request_id) {
  wire::ClusterStatus status;
  status.routing = routing_;
  for (const ServerInfo& server : servers_) {
    const bool formed = routing_.ready();
    status.servers.push_back(wire::ServerStatus{
        server.id, server.endpoint,
        formed ? std::string(ServerStateName(moves_.state(server.id))) : "registered",
        formed ? routing_.PartitionsOwnedBy(server.id) : 0});
  }
  status.moves_in_flight = static_cast<uint32_t>(moves_.moves_in_flight());
  status.moves_planned = static_cast<uint32_t>(moves_.moves_planned());
  status.moves_done = moves_.moves_done();
  status.limits_hit = limits_hit_.Hits();
  Reply(identity, wire::EncodeClusterStatusResponse(request_id, status));
}

}  // namespace ember::scheduler
