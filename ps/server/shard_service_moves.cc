// ShardService: partitions moving between servers (the source's answers to partitionTransfer and
// the target's loading, adoption or discarding of what arrived). Protocol in ps/partition_mover.h.
//
// A copy or hand-over goes in chunks of about ShardPolicy::transfer_chunk_bytes: when the phase
// starts (offset 0), the source lists the keys to send (every row of the partition, or the rows
// changed since the copy) and answers chunk after chunk of that list, each request naming the
// offset the previous reply gave. Chunk payload: u64 offset of the next chunk (0: this is the
// last), u32 table count (0 or 1), then per table the payload of a partition file
// (embedding/partition_file.h) with the chunk's rows.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>

#include "common/checksummed_file.h"
#include "embedding/partition_file.h"
#include "ps/server/shard_service.h"

namespace ember::ps {
namespace {

std::string_view StateName(PartitionState state) {
  switch (state) {
    case PartitionState::kNotOwned:
      return "not owned";
    case PartitionState::kOwned:
      return "owned with no move under way";
    case PartitionState::kCopying:
      return "being copied";
    case PartitionState::kHandedOver:
      return "handed over";
    case PartitionState::kIncoming:
      return "incoming";
  }
  return "in an unknown state";
}

}  // namespace

void ShardService::NoteChangedKeys(const embedding::EmbeddingTable& table,
                                   std::span<const uint64_t> keys,
                                   std::span<const uint32_t> partitions) {
  if (!outgoing_moves_.copying()) return;
  std::vector<uint32_t> hashed;
  if (partitions.empty()) {
    hashed.reserve(keys.size());
    for (uint64_t key : keys) hashed.push_back(table.PartitionOf(key));
    partitions = hashed;
  }
  outgoing_moves_.NoteChanged(table.spec().name, keys, partitions);
}

Status ShardService::CheckPlannedMove(const wire::PartitionTransferRequest& transfer,
                                      const Peer& peer) {
  const uint32_t p = transfer.partition;
  const std::optional<uint32_t> under_way = outgoing_moves_.TargetOf(p);
  const bool ends_move = transfer.phase == wire::TransferPhase::kRelease ||
                         transfer.phase == wire::TransferPhase::kResume;
  Status allowed = Status::Ok();
  if (ends_move) {
    // With no move under way the state checks answer (a repeated release finds nothing to do).
    if (under_way) allowed = plan_.CheckIsServer(*under_way, peer);
  } else if (const std::optional<uint32_t> target = plan_.TargetOf(p); !target) {
    allowed = Unavailable("the scheduler has planned no move of partition " + std::to_string(p) +
                          " out of server " + std::to_string(server_id_) + " (as of epoch " +
                          std::to_string(plan_.epoch()) + ")");
  } else if (under_way && *under_way != *target) {
    allowed = FailedPrecondition("partition " + std::to_string(p) + " is being copied to server " +
                                 std::to_string(*under_way) + ", while the scheduler now plans "
                                 "its move to server " + std::to_string(*target));
  } else {
    allowed = plan_.CheckIsServer(*target, peer);
    if (!allowed.ok()) allowed = allowed.WithContext("the move's target");
  }
  if (allowed.ok()) return allowed;
  counters_.Add(ShardCount::kTransfersRefused);
  const Status refused = allowed.WithContext(
      "partition-transfer (" + std::string(wire::TransferPhaseName(transfer.phase)) +
      ") of partition " + std::to_string(p) + " from " + peer.Describe() +
      " refused, nothing changed");
  spdlog::warn("server {}: {}", server_id_, refused.ToString());
  return refused;
}

Status ShardService::BeginCopyOut(uint32_t p, PartitionState state, const std::string& where) {
  if (state != PartitionState::kOwned && state != PartitionState::kCopying) {
    return FailedPrecondition(where + " cannot be copied: it is not served here");
  }
  // Checked against the plan a moment ago; it may have changed since.
  const std::optional<uint32_t> planned = plan_.TargetOf(p);
  if (!planned) {
    return Unavailable(where + ": its move was no longer planned when the copy began");
  }
  {
    // No push is between its ownership check and its noting while the state changes.
    std::unique_lock exclusive(transfer_mutex_);
    outgoing_moves_.BeginCopy(p, *planned);
  }
  // Rows pushed from now on are noted and sent again at the hand-over.
  MovesOut::TableKeys rows;
  for (const auto& [name, table] : tables_) {
    auto keys = embedding::PartitionKeys(*table, p);
    if (!keys.ok()) return keys.status().WithContext(where);
    if (!keys->empty()) rows.emplace_back(name, std::move(*keys));
  }
  outgoing_moves_.SetCopyKeys(p, std::move(rows));
  return Status::Ok();
}

Status ShardService::BeginHandOver(uint32_t p, PartitionState state, const std::string& where) {
  if (state != PartitionState::kCopying && state != PartitionState::kHandedOver) {
    return FailedPrecondition(where + " cannot be handed over: it was not copied");
  }
  std::unique_lock exclusive(transfer_mutex_);
  // Held bsp pushes stay with the server that will apply their clock: a partition is
  // handed over between clocks only (the target asks again shortly).
  const bool holds = deferred_.Holds([&](const std::string& name, uint64_t key) {
    auto table = tables_.find(name);
    return table != tables_.end() && table->second->PartitionOf(key) == p;
  });
  if (holds) {
    return Unavailable(where + " has held bsp pushes; hand it over after its clock");
  }
  outgoing_moves_.BeginHandOver(p);
  return Status::Ok();
}

Frame ShardService::HandlePartitionTransfer(const wire::RequestHeader& header,
                                            const wire::PartitionTransferRequest& transfer,
                                            const Peer& peer) {
  const uint32_t p = transfer.partition;
  if (p >= ownership_.size()) {
    return Error(header.request_id, InvalidArgument("partition-transfer names partition " +
                                                    std::to_string(p) + " of " +
                                                    std::to_string(ownership_.size())));
  }
  if (Status planned = CheckPlannedMove(transfer, peer); !planned.ok()) {
    return Error(header.request_id, planned);
  }
  const PartitionState state = ownership_.state(p);
  const std::string where = "partition " + std::to_string(p) + " of server " +
                            std::to_string(server_id_);
  const bool next_chunk = transfer.offset != 0;
  switch (transfer.phase) {
    case wire::TransferPhase::kCopy:
      if (next_chunk && state != PartitionState::kCopying) {
        return Error(header.request_id,
                     FailedPrecondition(where + " is not being copied: no chunk to send"));
      }
      if (!next_chunk) {
        if (Status began = BeginCopyOut(p, state, where); !began.ok()) {
          return Error(header.request_id, began);
        }
      }
      break;
    case wire::TransferPhase::kHandover:
      if (next_chunk && state != PartitionState::kHandedOver) {
        return Error(header.request_id,
                     FailedPrecondition(where + " is not handed over: no chunk to send"));
      }
      if (!next_chunk) {
        if (Status began = BeginHandOver(p, state, where); !began.ok()) {
          return Error(header.request_id, began);
        }
      }
      break;
    case wire::TransferPhase::kRelease:
      // Only a partition handed over (or already released: a repeated release) may be dropped;
      // one served here with no move under way keeps its rows and its ownership.
      if (state != PartitionState::kHandedOver && state != PartitionState::kNotOwned) {
        return Error(header.request_id,
                     FailedPrecondition(where + " cannot be released: it is " +
                                        std::string(StateName(state)) + ", not handed over"));
      }
      [[fallthrough]];
    case wire::TransferPhase::kResume:
      return AnswerMoveEnd(header.request_id, p, transfer.phase);
  }
  return TransferChunk(header.request_id, p, transfer.phase, transfer.offset);
}

Frame ShardService::TransferChunk(uint64_t request_id, uint32_t p, wire::TransferPhase phase,
                                  uint64_t offset) {
  const std::string what = "partition-transfer (" + std::string(wire::TransferPhaseName(phase)) +
                           ") of partition " + std::to_string(p) + " at offset " +
                           std::to_string(offset);
  const auto rows_per_chunk = [&](const std::string& name) -> uint64_t {
    const embedding::EmbeddingTable& table = *tables_.find(name)->second;
    const uint64_t row_bytes =
        sizeof(uint64_t) + sizeof(float) * (uint64_t{table.dim()} + table.state_floats());
    return policy_.transfer_chunk_bytes / row_bytes;
  };
  auto chunk = outgoing_moves_.NextChunk(p, phase, offset, rows_per_chunk, what);
  if (!chunk.ok()) return Error(request_id, chunk.status());
  PayloadWriter out;
  out.Put<uint64_t>(chunk->next);
  out.Put<uint32_t>(chunk->table.empty() ? 0 : 1);
  if (!chunk->table.empty()) {
    Status put =
        embedding::AppendPartitionRows(*tables_.find(chunk->table)->second, p, &chunk->keys, out);
    if (!put.ok()) return Error(request_id, put.WithContext(what));
  }
  const std::string bytes = out.Take();
  return wire::EncodePartitionDataResponse(
      request_id, ownership_.epoch(), bytes.size(),
      [&bytes](std::span<uint8_t> data) { std::memcpy(data.data(), bytes.data(), bytes.size()); });
}

Frame ShardService::AnswerMoveEnd(uint64_t request_id, uint32_t p, wire::TransferPhase phase) {
  const std::optional<uint32_t> mover = outgoing_moves_.TargetOf(p);
  // Nothing under way (a repeated release or resume), or a resume: answered OK.
  if (mover) heartbeat_requested_.store(true);
  if (!mover || phase == wire::TransferPhase::kResume) {
    return wire::EncodeStatusResponse(request_id, ownership_.epoch(), Status::Ok());
  }
  return Error(request_id,
               Unavailable("partition " + std::to_string(p) + " of server " +
                           std::to_string(server_id_) + ": the routing table this server last "
                           "heard (epoch " + std::to_string(plan_.epoch()) + ") does not give it "
                           "to server " + std::to_string(*mover) + " yet; it is dropped once "
                           "the scheduler's does"));
}

void ShardService::ApplyOrders(const wire::ServerOrders& orders,
                               std::chrono::steady_clock::time_point asked_at) {
  const RoutingTable& routing = orders.routing;
  plan_.Update(routing, orders.moves_out, orders.planned_out);
  ApplyRouting(routing);
  for (const auto& [p, move] : outgoing_moves_.UnderWay()) {
    const auto& [target, copy_began] = move;
    if (p >= routing.owners.size()) continue;
    if (routing.owners[p] != server_id_) {
      spdlog::debug("server {}: the scheduler gave partition {} to server {}", server_id_, p,
                    routing.owners[p]);
      Release(p);
    } else if (copy_began < asked_at && plan_.InFlightTargetOf(p) != target) {
      // (A copy begun after the heartbeat was sent may be of a move that started since.)
      spdlog::warn("server {}: the move of partition {} to server {} is no longer in flight "
                   "(aborted); serving it again", server_id_, p, target);
      Resume(p);
    }
  }
}

void ShardService::EndMoveOut(uint32_t p, PartitionState to) {
  std::unique_lock exclusive(transfer_mutex_);
  outgoing_moves_.End(p, to);
}

void ShardService::Release(uint32_t p) {
  if (ownership_.state(p) == PartitionState::kNotOwned) return;
  EndMoveOut(p, PartitionState::kNotOwned);
  counters_.Add(ShardCount::kMovesOut);
  for (const auto& [name, table] : tables_) {
    auto erased = table->Erase(p);
    if (!erased.ok()) {
      spdlog::warn("server {}: dropping the rows of partition {} of '{}' that moved away: {}",
                   server_id_, p, name, erased.status().ToString());
    }
  }
  spdlog::debug("server {}: partition {} moved away", server_id_, p);
}

void ShardService::Resume(uint32_t p) {
  const PartitionState state = ownership_.state(p);
  if (state == PartitionState::kCopying || state == PartitionState::kHandedOver) {
    EndMoveOut(p, PartitionState::kOwned);
  }
}

Result<uint64_t> ShardService::LoadIncoming(uint32_t p, std::span<const uint8_t> chunk,
                                            bool starts_copy) {
  if (p >= ownership_.size()) return InvalidArgument("no partition " + std::to_string(p));
  if (ownership_.serves(p)) {
    return FailedPrecondition("partition " + std::to_string(p) + " is already served here");
  }
  ownership_.set(p, PartitionState::kIncoming);
  if (starts_copy) {
    // What an earlier attempt left.
    for (const auto& [name, table] : tables_) RETURN_IF_ERROR(table->Erase(p).status());
  }
  PayloadReader in(std::string_view(reinterpret_cast<const char*>(chunk.data()), chunk.size()));
  const std::string where = "the transfer of partition " + std::to_string(p);
  uint64_t next = 0;
  uint32_t table_count = 0;
  if (!in.Get(next) || !in.Get(table_count)) return DataLoss(where + " is corrupt: truncated");
  for (uint32_t t = 0; t < table_count; ++t) {
    ASSIGN_OR_RETURN(embedding::PartitionRows rows, embedding::TakePartitionRows(in, where));
    ASSIGN_OR_RETURN(embedding::EmbeddingTable * table, FindTable(rows.table));
    RETURN_IF_ERROR(embedding::CheckPartitionRows(*table, p, rows, where));
    RETURN_IF_ERROR(embedding::RestorePartitionRows(*table, rows));
  }
  if (in.remaining() != 0) return DataLoss(where + " is corrupt: trailing bytes");
  return next;
}

void ShardService::Adopt(uint32_t p, uint64_t epoch) {
  ownership_.advance_epoch(epoch);
  if (ownership_.state(p) != PartitionState::kOwned) {
    counters_.Add(ShardCount::kMovesIn);
  }
  ownership_.set(p, PartitionState::kOwned);
}

void ShardService::Discard(uint32_t p) {
  if (ownership_.state(p) != PartitionState::kIncoming) return;
  for (const auto& [name, table] : tables_) (void)table->Erase(p);
  ownership_.set(p, PartitionState::kNotOwned);
}

void ShardService::ApplyRouting(const RoutingTable& routing) {
  ownership_.advance_epoch(routing.epoch);
  for (uint32_t p = 0; p < ownership_.size() && p < routing.owners.size(); ++p) {
    // A commit whose answer never arrived: the scheduler says the partition is ours.
    if (routing.owners[p] == server_id_ && ownership_.state(p) == PartitionState::kIncoming) {
      ownership_.set(p, PartitionState::kOwned);
    }
  }
}

std::vector<uint32_t> ShardService::StalledMovesOut(Millis copy_limit, Millis hold_limit) const {
  return outgoing_moves_.Stalled(copy_limit, hold_limit);
}

}  // namespace ember::ps
