// ShardMoves implementation.
#include "scheduler/shard_moves.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace ember::scheduler {

std::string_view ServerStateName(ServerState state) {
  switch (state) {
    case ServerState::kLive: return "live";
    case ServerState::kDraining: return "draining";
    case ServerState::kDrained: return "drained";
    case ServerState::kDead: return "dead";
  }
  return "?";
}

void ShardMoves::Start(uint32_t servers, TimePoint now) {
  servers_.assign(servers, Server{ServerState::kLive, now, false});
}

uint32_t ShardMoves::Join(const RoutingTable& routing, TimePoint now) {
  servers_.push_back(Server{ServerState::kLive, now, false});
  Replan(routing);
  return static_cast<uint32_t>(servers_.size() - 1);
}

Status ShardMoves::Drain(uint32_t server, const RoutingTable& routing) {
  if (server >= servers_.size()) return NotFound("no server " + std::to_string(server));
  Server& s = servers_[server];
  if (s.state == ServerState::kDead) {
    return FailedPrecondition("server " + std::to_string(server) +
                              " is dead: its partitions cannot be copied from it");
  }
  if (s.state == ServerState::kDraining || s.state == ServerState::kDrained) return Status::Ok();
  size_t holders = 0;
  for (const Server& other : servers_) {
    holders += other.state == ServerState::kLive || other.state == ServerState::kDead;
  }
  if (holders <= 1) {
    return FailedPrecondition("server " + std::to_string(server) +
                              " is the last one that can hold partitions");
  }
  s.state = ServerState::kDraining;
  Replan(routing);
  return Status::Ok();
}

Status ShardMoves::Heartbeat(uint32_t server, TimePoint now) {
  if (server >= servers_.size()) return NotFound("no server " + std::to_string(server));
  Server& s = servers_[server];
  s.last_seen = now;
  s.heard = true;
  if (s.state == ServerState::kDead) {
    spdlog::info("scheduler: server {} is back", server);
    s.state = ServerState::kLive;
  }
  return Status::Ok();
}

std::vector<uint32_t> ShardMoves::ExpireSilent(TimePoint now) {
  std::vector<uint32_t> expired;
  for (uint32_t id = 0; id < servers_.size(); ++id) {
    Server& s = servers_[id];
    if (!s.heard || (s.state != ServerState::kLive && s.state != ServerState::kDraining)) continue;
    if (now - s.last_seen <= server_timeout_) continue;
    s.state = ServerState::kDead;
    expired.push_back(id);
    for (auto it = in_flight_.begin(); it != in_flight_.end();) {
      if (it->second.from == id || it->second.to == id) {
        it = in_flight_.erase(it);
      } else {
        ++it;
      }
    }
    planned_.erase(std::remove_if(planned_.begin(), planned_.end(),
                                  [id](const PartitionMove& m) { return m.from == id || m.to == id; }),
                   planned_.end());
  }
  return expired;
}

void ShardMoves::Replan(const RoutingTable& routing) {
  std::vector<uint32_t> targets;
  for (uint32_t id = 0; id < servers_.size(); ++id) {
    const ServerState state = servers_[id].state;
    if (state == ServerState::kLive || state == ServerState::kDead) targets.push_back(id);
  }
  // Plan from the owners as they will be once the moves in flight are done.
  std::vector<uint32_t> owners = routing.owners;
  for (const auto& [partition, move] : in_flight_) owners[partition] = move.to;
  planned_.clear();
  for (const PartitionMove& move : PlanRebalance(owners, targets)) {
    // A dead server can neither send nor receive now; its share waits for it.
    if (servers_[move.from].state == ServerState::kDead ||
        servers_[move.to].state == ServerState::kDead) {
      continue;
    }
    planned_.push_back(move);
  }
}

std::vector<PartitionMove> ShardMoves::TasksFor(uint32_t server, const RoutingTable& routing) {
  if (in_flight_.empty() && planned_.empty()) Replan(routing);  // e.g. a dead server came back
  size_t running = 0;
  for (const auto& [partition, move] : in_flight_) running += move.to == server;
  for (auto it = planned_.begin(); it != planned_.end() && running < moves_per_server_;) {
    if (it->to == server && !in_flight_.count(it->partition) &&
        routing.owners[it->partition] == it->from) {
      in_flight_[it->partition] = *it;
      ++running;
      it = planned_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<PartitionMove> tasks;
  for (const auto& [partition, move] : in_flight_) {
    if (move.to != server) continue;
    auto told = told_.find(move.from);
    if (told != told_.end() && told->second.count({partition, move.to})) tasks.push_back(move);
  }
  return tasks;
}

ShardMoves::MovesOut ShardMoves::MovesOutOf(uint32_t server) {
  MovesOut out;
  std::set<std::pair<uint32_t, uint32_t>>& told = told_[server];
  told.clear();
  for (const auto& [partition, move] : in_flight_) {
    if (move.from != server) continue;
    told.insert({partition, move.to});
    out.in_flight.push_back(move);
  }
  for (const PartitionMove& move : planned_) {
    if (move.from != server || in_flight_.count(move.partition)) continue;
    told.insert({move.partition, move.to});
    out.planned.push_back(move);
  }
  return out;
}

Status ShardMoves::Commit(const PartitionMove& move) {
  auto it = in_flight_.find(move.partition);
  if (it == in_flight_.end() || it->second.from != move.from || it->second.to != move.to) {
    return FailedPrecondition("the move of partition " + std::to_string(move.partition) +
                              " from server " + std::to_string(move.from) + " to server " +
                              std::to_string(move.to) + " is not in progress (aborted?)");
  }
  in_flight_.erase(it);
  ++done_;
  return Status::Ok();
}

void ShardMoves::Abort(const PartitionMove& move, const Status& why) {
  auto it = in_flight_.find(move.partition);
  if (it == in_flight_.end() || it->second.from != move.from ||
      (move.to != kAnyTarget && it->second.to != move.to)) {
    return;
  }
  spdlog::warn("scheduler: move of partition {} from server {} to {} aborted: {}", move.partition,
               move.from, move.to, why.ToString());
  planned_.push_back(it->second);  // tried again later
  in_flight_.erase(it);
}

bool ShardMoves::DrainedNow(uint32_t server, const RoutingTable& routing) {
  Server& s = servers_.at(server);
  if (s.state == ServerState::kDrained) return true;
  if (s.state != ServerState::kDraining || routing.PartitionsOwnedBy(server) > 0) return false;
  s.state = ServerState::kDrained;
  spdlog::info("scheduler: server {} is drained", server);
  return true;
}

ShardMoves::Saved ShardMoves::Save() const {
  Saved saved;
  for (const Server& server : servers_) saved.states.push_back(server.state);
  for (const auto& [partition, move] : in_flight_) saved.in_flight.push_back(move);
  saved.done = done_;
  return saved;
}

void ShardMoves::Restore(const Saved& saved, const RoutingTable& routing, TimePoint now) {
  servers_.clear();
  for (ServerState state : saved.states) servers_.push_back(Server{state, now, true});
  in_flight_.clear();
  for (const PartitionMove& move : saved.in_flight) in_flight_[move.partition] = move;
  told_.clear();
  done_ = saved.done;
  planned_.clear();
  if (!servers_.empty()) Replan(routing);
}

}  // namespace ember::scheduler
