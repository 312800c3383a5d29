// TransferSource: a server's answers, as the source of partition moves, to partition-transfer
// requests.
#include "ps/server/transfer_source.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <mutex>
#include <optional>

#include "common/checksummed_file.h"
#include "embedding/partition_file.h"

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

Status TransferSource::CheckPlannedMove(const wire::PartitionTransferRequest& transfer,
                                        const Peer& peer) {
  const uint32_t p = transfer.partition;
  const std::optional<uint32_t> under_way = server_.moves->TargetOf(p);
  const bool ends_move = transfer.phase == wire::TransferPhase::kRelease ||
                         transfer.phase == wire::TransferPhase::kResume;
  Status allowed = Status::Ok();
  if (ends_move) {
    // With no move under way the state checks answer (a repeated release finds nothing to do).
    if (under_way) allowed = server_.plan->CheckIsServer(*under_way, peer);
  } else if (const std::optional<uint32_t> target = server_.plan->TargetOf(p); !target) {
    allowed = Unavailable("the scheduler has planned no move of partition " + std::to_string(p) +
                          " out of server " + std::to_string(server_.id) + " (as of epoch " +
                          std::to_string(server_.plan->epoch()) + ")");
  } else if (under_way && *under_way != *target) {
    allowed = FailedPrecondition("partition " + std::to_string(p) + " is being copied to server " +
                                 std::to_string(*under_way) +
                                 ", while the scheduler now plans its move to server " +
                                 std::to_string(*target));
  } else {
    allowed = server_.plan->CheckIsServer(*target, peer);
    if (!allowed.ok()) allowed = allowed.WithContext("the move's target");
  }
  if (allowed.ok()) return allowed;
  server_.counters->Add(ShardCount::kTransfersRefused);
  const Status refused = allowed.WithContext("partition-transfer (" +
                                             std::string(wire::TransferPhaseName(transfer.phase)) +
                                             ") of partition " + std::to_string(p) + " from " +
                                             peer.Describe() + " refused, nothing changed");
  spdlog::warn("server {}: {}", server_.id, refused.ToString());
  return refused;
}

Status TransferSource::BeginCopyOut(uint32_t p, PartitionState state, const std::string& where) {
  if (state != PartitionState::kOwned && state != PartitionState::kCopying) {
    return FailedPrecondition(where + " cannot be copied: it is not served here");
  }
  // Checked against the plan a moment ago; it may have changed since.
  const std::optional<uint32_t> planned = server_.plan->TargetOf(p);
  if (!planned) {
    return Unavailable(where + ": its move was no longer planned when the copy began");
  }
  {
    // No push is between its ownership check and its rows while the state changes: each is wholly
    // before the copy's listing, or noted by its table for the hand-over.
    std::unique_lock exclusive(*server_.transfer_mutex);
    server_.moves->BeginCopy(p, *planned);
    for (const auto& [name, table] : *server_.tables) table->BeginMoveChanges(p);
  }
  // Rows changed from now on are noted by the tables and sent again at the hand-over.
  MovesOut::TableKeys rows;
  for (const auto& [name, table] : *server_.tables) {
    auto keys = embedding::PartitionKeys(*table, p);
    if (!keys.ok()) return keys.status().WithContext(where);
    if (!keys->empty()) rows.emplace_back(name, std::move(*keys));
  }
  server_.moves->SetCopyKeys(p, std::move(rows));
  return Status::Ok();
}

Status TransferSource::BeginHandOver(uint32_t p, PartitionState state, const std::string& where) {
  if (state != PartitionState::kCopying && state != PartitionState::kHandedOver) {
    return FailedPrecondition(where + " cannot be handed over: it was not copied");
  }
  std::unique_lock exclusive(*server_.transfer_mutex);
  // Held bsp pushes stay with the server that will apply their clock: a partition is
  // handed over between clocks only (the target asks again shortly).
  const bool holds = server_.deferred->Holds([&](const std::string& name, uint64_t key) {
    auto table = server_.tables->find(name);
    return table != server_.tables->end() && table->second->PartitionOf(key) == p;
  });
  if (holds) {
    return Unavailable(where + " has held bsp pushes; hand it over after its clock");
  }
  MovesOut::TableKeys changed;
  for (const auto& [name, table] : *server_.tables) {
    changed.emplace_back(name, table->MoveChanges(p));
  }
  server_.moves->BeginHandOver(p, std::move(changed));
  return Status::Ok();
}

Result<Frame> TransferSource::Answer(uint64_t request_id,
                                     const wire::PartitionTransferRequest& transfer,
                                     const Peer& peer) {
  const uint32_t p = transfer.partition;
  if (p >= server_.ownership->size()) {
    return InvalidArgument("partition-transfer names partition " + std::to_string(p) + " of " +
                           std::to_string(server_.ownership->size()));
  }
  if (Status planned = CheckPlannedMove(transfer, peer); !planned.ok()) {
    return planned;
  }
  const PartitionState state = server_.ownership->state(p);
  const std::string where =
      "partition " + std::to_string(p) + " of server " + std::to_string(server_.id);
  const bool next_chunk = transfer.offset != 0;
  switch (transfer.phase) {
    case wire::TransferPhase::kCopy:
      if (next_chunk && state != PartitionState::kCopying) {
        return FailedPrecondition(where + " is not being copied: no chunk to send");
      }
      if (!next_chunk) {
        if (Status began = BeginCopyOut(p, state, where); !began.ok()) {
          return began;
        }
      }
      break;
    case wire::TransferPhase::kHandover:
      if (next_chunk && state != PartitionState::kHandedOver) {
        return FailedPrecondition(where + " is not handed over: no chunk to send");
      }
      if (!next_chunk) {
        if (Status began = BeginHandOver(p, state, where); !began.ok()) {
          return began;
        }
      }
      break;
    case wire::TransferPhase::kRelease:
      // Only a partition handed over (or already released: a repeated release) may be dropped;
      // one served here with no move under way keeps its rows and its ownership.
      if (state != PartitionState::kHandedOver && state != PartitionState::kNotOwned) {
        return FailedPrecondition(where + " cannot be released: it is " +
                                  std::string(StateName(state)) + ", not handed over");
      }
      [[fallthrough]];
    case wire::TransferPhase::kResume:
      return AnswerMoveEnd(request_id, p, transfer.phase);
  }
  return TransferChunk(request_id, p, transfer.phase, transfer.offset);
}

Result<Frame> TransferSource::TransferChunk(uint64_t request_id, uint32_t p,
                                            wire::TransferPhase phase, uint64_t offset) {
  const std::string what = "partition-transfer (" + std::string(wire::TransferPhaseName(phase)) +
                           ") of partition " + std::to_string(p) + " at offset " +
                           std::to_string(offset);
  const auto rows_per_chunk = [&](const std::string& name) -> uint64_t {
    const embedding::EmbeddingTable& table = *server_.tables->find(name)->second;
    const uint64_t row_bytes =
        sizeof(uint64_t) + sizeof(float) * (uint64_t{table.dim()} + table.state_floats());
    return server_.chunk_bytes / row_bytes;
  };
  auto chunk = server_.moves->NextChunk(p, phase, offset, rows_per_chunk, what);
  if (!chunk.ok()) return chunk.status();
  PayloadWriter out;
  out.Put<uint64_t>(chunk->next);
  out.Put<uint32_t>(chunk->table.empty() ? 0 : 1);
  if (!chunk->table.empty()) {
    Status put = embedding::AppendPartitionRows(*server_.tables->find(chunk->table)->second, p,
                                                &chunk->keys, out);
    if (!put.ok()) return put.WithContext(what);
  }
  const std::string bytes = out.Take();
  return wire::EncodePartitionDataResponse(
      request_id, server_.ownership->epoch(), bytes.size(),
      [&bytes](std::span<uint8_t> data) { std::memcpy(data.data(), bytes.data(), bytes.size()); });
}

Result<Frame> TransferSource::AnswerMoveEnd(uint64_t request_id, uint32_t p,
                                            wire::TransferPhase phase) {
  const std::optional<uint32_t> mover = server_.moves->TargetOf(p);
  // Nothing under way (a repeated release or resume), or a resume: answered OK.
  if (mover) heartbeat_requested_.store(true);
  if (!mover || phase == wire::TransferPhase::kResume) {
    return wire::EncodeStatusResponse(request_id, server_.ownership->epoch(), Status::Ok());
  }
  return Unavailable("partition " + std::to_string(p) + " of server " + std::to_string(server_.id) +
                     ": the routing table this server last heard (epoch " +
                     std::to_string(server_.plan->epoch()) + ") does not give it to server " +
                     std::to_string(*mover) + " yet; it is dropped once the scheduler's does");
}

}  // namespace ember::ps
