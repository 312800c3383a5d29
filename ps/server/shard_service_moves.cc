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
  if (copying_.load(std::memory_order_acquire) == 0) return;
  std::lock_guard lock(changed_mutex_);
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint32_t partition = partitions.empty() ? table.PartitionOf(keys[i]) : partitions[i];
    if (ownership_.state(partition) == PartitionState::kCopying) {
      changed_[partition][table.spec().name].insert(keys[i]);
    }
  }
}

Status ShardService::CheckPlannedMove(const wire::PartitionTransferRequest& transfer,
                                      const Peer& peer) {
  const uint32_t p = transfer.partition;
  const std::optional<uint32_t> under_way = MoverOf(p);
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
  transfers_refused_.fetch_add(1, std::memory_order_relaxed);
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
  const uint32_t target = *planned;
  {
    // No push is between its ownership check and its noting while the state changes.
    std::unique_lock exclusive(transfer_mutex_);
    std::lock_guard lock(changed_mutex_);
    if (state == PartitionState::kOwned) copying_.fetch_add(1);
    ownership_.set(p, PartitionState::kCopying);
    changed_.erase(p);
    const auto now = std::chrono::steady_clock::now();
    moving_out_[p] = MoveOut{target, now, now};
  }
  // Rows pushed from now on are noted and sent again at the hand-over.
  OutgoingRows rows{wire::TransferPhase::kCopy, {}, 0};
  for (const auto& [name, table] : tables_) {
    auto keys = embedding::PartitionKeys(*table, p);
    if (!keys.ok()) return keys.status().WithContext(where);
    rows.total += keys->size();
    if (!keys->empty()) rows.tables.emplace_back(name, std::move(*keys));
  }
  std::lock_guard lock(changed_mutex_);
  outgoing_[p] = std::move(rows);
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
  std::lock_guard lock(changed_mutex_);
  // A repeated hand-over (its answer lost) finds the partition handed over and sends the
  // same rows again.
  if (state == PartitionState::kCopying) {
    copying_.fetch_sub(1);
    ownership_.set(p, PartitionState::kHandedOver);
    OutgoingRows rows{wire::TransferPhase::kHandover, {}, 0};
    for (auto& [name, keys] : changed_[p]) {
      rows.total += keys.size();
      rows.tables.emplace_back(name, std::vector<uint64_t>(keys.begin(), keys.end()));
    }
    outgoing_[p] = std::move(rows);
    changed_.erase(p);
  }
  if (auto move = moving_out_.find(p); move != moving_out_.end()) {
    move->second.phase_began = std::chrono::steady_clock::now();
  }
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
  std::string table_name;
  std::vector<uint64_t> keys;
  uint64_t next = 0;
  {
    std::lock_guard lock(changed_mutex_);
    auto rows = outgoing_.find(p);
    if (rows == outgoing_.end() || rows->second.phase != phase) {
      return Error(request_id, FailedPrecondition(what + ": no such transfer is under way"));
    }
    if (offset > rows->second.total || (offset == rows->second.total && offset != 0)) {
      return Error(request_id, InvalidArgument(what + ": the transfer has " +
                                          std::to_string(rows->second.total) + " rows"));
    }
    uint64_t skipped = 0;
    for (const auto& [name, table_keys] : rows->second.tables) {
      if (offset >= skipped + table_keys.size()) {
        skipped += table_keys.size();
        continue;
      }
      auto table = tables_.find(name);
      const uint64_t row_bytes =
          sizeof(uint64_t) +
          sizeof(float) * (uint64_t{table->second->dim()} + table->second->state_floats());
      const uint64_t rows_per_chunk = std::max<uint64_t>(1, policy_.transfer_chunk_bytes / row_bytes);
      const uint64_t first = offset - skipped;
      const uint64_t last = std::min<uint64_t>(table_keys.size(), first + rows_per_chunk);
      table_name = name;
      keys.assign(table_keys.begin() + first, table_keys.begin() + last);
      next = skipped + last == rows->second.total ? 0 : skipped + last;
      break;
    }
  }
  PayloadWriter out;
  out.Put<uint64_t>(next);
  out.Put<uint32_t>(table_name.empty() ? 0 : 1);
  if (!table_name.empty()) {
    Status put = embedding::AppendPartitionRows(*tables_.find(table_name)->second, p, &keys, out);
    if (!put.ok()) return Error(request_id, put.WithContext(what));
  }
  const std::string bytes = out.Take();
  return wire::EncodePartitionDataResponse(
      request_id, ownership_.epoch(), bytes.size(),
      [&bytes](std::span<uint8_t> data) { std::memcpy(data.data(), bytes.data(), bytes.size()); });
}

std::optional<uint32_t> ShardService::MoverOf(uint32_t p) const {
  std::lock_guard lock(changed_mutex_);
  auto it = moving_out_.find(p);
  if (it == moving_out_.end()) return std::nullopt;
  return it->second.target;
}

Frame ShardService::AnswerMoveEnd(uint64_t request_id, uint32_t p, wire::TransferPhase phase) {
  const std::optional<uint32_t> mover = MoverOf(p);
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
  std::map<uint32_t, MoveOut> moving_out;
  {
    std::lock_guard lock(changed_mutex_);
    moving_out = moving_out_;
  }
  for (const auto& [p, move] : moving_out) {
    if (p >= routing.owners.size()) continue;
    if (routing.owners[p] != server_id_) {
      spdlog::debug("server {}: the scheduler gave partition {} to server {}", server_id_, p,
                    routing.owners[p]);
      Release(p);
    } else if (move.copy_began < asked_at && plan_.InFlightTargetOf(p) != move.target) {
      // (A copy begun after the heartbeat was sent may be of a move that started since.)
      spdlog::warn("server {}: the move of partition {} to server {} is no longer in flight "
                   "(aborted); serving it again", server_id_, p, move.target);
      Resume(p);
    }
  }
}

void ShardService::EndMoveOut(uint32_t p, PartitionState to) {
  std::unique_lock exclusive(transfer_mutex_);
  std::lock_guard lock(changed_mutex_);
  if (ownership_.state(p) == PartitionState::kCopying) copying_.fetch_sub(1);
  ownership_.set(p, to);
  changed_.erase(p);
  moving_out_.erase(p);
  outgoing_.erase(p);
}

void ShardService::Release(uint32_t p) {
  if (ownership_.state(p) == PartitionState::kNotOwned) return;
  EndMoveOut(p, PartitionState::kNotOwned);
  moves_out_.fetch_add(1, std::memory_order_relaxed);
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
    moves_in_.fetch_add(1, std::memory_order_relaxed);
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
  std::lock_guard lock(changed_mutex_);
  std::vector<uint32_t> stalled;
  const auto now = std::chrono::steady_clock::now();
  for (const auto& [p, move] : moving_out_) {
    const bool held = ownership_.state(p) == PartitionState::kHandedOver;
    if (now - move.phase_began > (held ? hold_limit : copy_limit)) stalled.push_back(p);
  }
  return stalled;
}

}  // namespace ember::ps
