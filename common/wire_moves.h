// Partition moves and checkpoints on the wire: servers' heartbeats and the orders the scheduler
// answers them with, move decisions, the transfer of a partition's rows between servers, and the
// checkpoint requests to servers and the scheduler (write/restore/verify, cuts, checkpoint now),
// with their replies. scheduler/shard_moves.h and ps/server/partition_mover.h drive the moves.
//
// Part of common/wire.h, which includes this header and decodes these messages. A partition's
// rows are built in place in the outgoing frame.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/checkpoint_layout.h"
#include "common/clock_grant.h"
#include "common/frame.h"
#include "common/routing_table.h"
#include "common/wire_header.h"

namespace ember::wire {

using ember::CheckpointAction;
using ember::CutInfo;

// ---- Requests ----

struct MoveOrder {
  uint32_t partition = 0;
  uint32_t from = 0;  // server ids
  uint32_t to = 0;
  bool operator==(const MoveOrder&) const = default;
};
struct ServerHeartbeatRequest {
  static constexpr std::string_view kName = "server-heartbeat";
  static constexpr PeerRoles kSenders = kServers;
  uint32_t server = 0;
};
struct MoveDecisionRequest {
  static constexpr std::string_view kName = "move-decision";
  static constexpr PeerRoles kSenders = kServers;
  MoveOrder move;
  bool commit = false;  // false: abort
  std::string reason;   // abort: why
};
enum class TransferPhase : uint8_t { kCopy = 0, kHandover = 1, kRelease = 2, kResume = 3 };
constexpr std::string_view TransferPhaseName(TransferPhase phase) {
  switch (phase) {
    case TransferPhase::kCopy: return "copy";
    case TransferPhase::kHandover: return "hand-over";
    case TransferPhase::kRelease: return "release";
    case TransferPhase::kResume: return "resume";
  }
  return "unknown phase";
}
struct PartitionTransferRequest {
  static constexpr std::string_view kName = "partition-transfer";
  static constexpr PeerRoles kSenders = kServers;
  uint32_t partition = 0;
  TransferPhase phase = TransferPhase::kCopy;
  // Copy and hand-over come in chunks that fit a frame: 0 starts the phase (the source takes
  // the list of rows to send), a chunk's reply names the offset of the next one.
  uint64_t offset = 0;
};
struct CheckpointRequest {
  static constexpr std::string_view kName = "checkpoint";
  // Trainers write the checkpoints of a cut; verifying and restoring (replacing every row) take
  // an admin key.
  PeerRoles senders() const { return action == CheckpointAction::kWrite ? kTrainers : kAdmins; }
  std::string dir;  // checkpoint directory as the server sees it
  CheckpointAction action = CheckpointAction::kWrite;
  // Writing: the cut's id (0: a full checkpoint outside any chain), the cut it follows (0: none)
  // and whether to track changes from it on (ember.capnp's Checkpoint).
  uint64_t cut = 0;
  uint64_t previous_cut = 0;
  bool track = false;
};
struct CheckpointCutRequest {
  static constexpr std::string_view kName = "checkpoint-cut";
  static constexpr PeerRoles kSenders = kTrainers;
  uint32_t trainer = 0;
  uint64_t clock = 0;
  bool done = false;  // false: arrive
  std::string error;  // done: why the coordinator failed (empty: it succeeded)
};
struct CheckpointNowRequest : CutRequest {
  static constexpr std::string_view kName = "checkpoint-now";
  static constexpr PeerRoles kSenders = kAdmins;
};

Frame EncodeServerHeartbeat(const RequestHeader& header, uint32_t server);
Frame EncodeMoveDecision(const RequestHeader& header, const MoveDecisionRequest& decision);
Frame EncodePartitionTransfer(const RequestHeader& header,
                              const PartitionTransferRequest& transfer);
Frame EncodeCheckpoint(const RequestHeader& header, const CheckpointRequest& checkpoint);
Frame EncodeCheckpointCut(const RequestHeader& header, const CheckpointCutRequest& cut);
Frame EncodeCheckpointNow(const RequestHeader& header, const CheckpointNowRequest& now);

// ---- Responses (decoded as these structs and CutInfo) ----

struct ServerOrders {
  RoutingTable routing;
  std::vector<MoveOrder> moves;      // moves this server runs (as target) now
  bool exit = false;                 // drained: the server may stop
  std::vector<MoveOrder> moves_out;    // moves in flight out of this server (it is their source)
  std::vector<MoveOrder> planned_out;  // moves planned out of it, not started yet
};

// The rows a partition transfer carries; points into the decoded frame.
struct PartitionData {
  std::span<const uint8_t> bytes;
};

// Carries the routing table's epoch as its own.
Frame EncodeServerOrdersResponse(uint64_t request_id, const ServerOrders& orders);
Frame EncodeCutInfoResponse(uint64_t request_id, uint64_t epoch, const CutInfo& cut);
// A partition transfer's reply with room for `bytes`; `fill` writes every one of them in place
// (the frame's memory is not cleared first).
Frame EncodePartitionDataResponse(uint64_t request_id, uint64_t epoch, size_t bytes,
                                  const std::function<void(std::span<uint8_t>)>& fill);

}  // namespace ember::wire
