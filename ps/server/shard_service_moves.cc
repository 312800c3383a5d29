// ShardService: partitions moving between servers: the source's end of a move as the scheduler
// decides it (the answers to partitionTransfer: TransferSource), and the target's loading,
// adoption or discarding of what arrived. Protocol in ps/server/partition_mover.h.
#include <spdlog/spdlog.h>

#include <mutex>

#include "common/checksummed_file.h"
#include "embedding/partition_file.h"
#include "ps/server/shard_service.h"

namespace ember::ps {

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
  for (const auto& [name, table] : tables_) table->EndMoveChanges(p);
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
