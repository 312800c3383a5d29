// The wire codec: ember messages <-> transport frames (common/frame.h), through the schema in common/ember.capnp.
//
// This is the only place that reads Cap'n Proto messages. Decoding validates the frame (size,
// alignment, segment table, traversal limits, field sizes) and turns it into plain C++ views;
// every Cap'n Proto exception stops here and becomes an InvalidArgument Status, so a malformed or
// truncated frame can never take a process down. Encoders write bulk arrays (keys, rows,
// gradients) as raw little-endian bytes straight into the outgoing frame.
//
// Thread-safety: all functions are reentrant; decoded objects are plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/checkpoint_layout.h"
#include "common/clock_grant.h"
#include "common/cluster_status.h"
#include "common/frame.h"
#include "common/row_format.h"
#include "common/server_stats.h"
#include "common/routing_table.h"
#include "common/status.h"
#include "common/sync_options.h"
#include "common/table_spec.h"

namespace ember::wire {

constexpr uint32_t kProtocolVersion = 1;  // == protocolVersion in ember.capnp

using ember::kMaxFrameBytes;

// Plain values the wire carries that its users know by their own headers.
using ember::CheckpointAction;
using ember::ClockGrant;
using ember::ClusterStatus;
using ember::CutInfo;
using ember::RowFormat;
using ember::ServerStats;
using ember::ServerStatus;
using ember::TableStats;


// ---- Requests ----

struct PingRequest {};
struct StatsRequest {};
struct GetRoutingRequest {};
struct PullRequest {
  std::string table;
  std::span<const uint64_t> keys;  // points into the decoded frame
  RowFormat row_format = RowFormat::kF32;  // of the reply's rows
};
// Who sent a push, so that a server applies a resent push only once: a client that resends the
// requests in flight after a reconnect keeps their request ids, and the server records which
// (sender, request id) it applied. Everything of `id` below `acked_below` was answered, so the
// server may forget those records. id 0: no record, every copy is applied.
struct PushSender {
  uint64_t id = 0;
  uint64_t acked_below = 0;
};
struct PushRequest {
  std::string table;
  std::span<const uint64_t> keys;
  std::span<const float> gradients;  // keys.size() * dim, row-major (widened if sent as fp16)
  uint64_t clock = 0;
  uint32_t trainer = 0;   // sender's trainer id
  bool deferred = false;  // bsp: hold until an ApplyClockRequest for `clock`
  PushSender sender;
};
struct ApplyClockRequest {
  uint64_t clock = 0;
  std::vector<uint32_t> trainers;  // whose deferred pushes of `clock` count
  Combine combine = Combine::kMean;
};
struct TrainerClockRequest {
  uint32_t trainer = 0;
  uint64_t clock = 0;  // steps completed
  bool leave = false;
};
struct HeartbeatRequest {
  uint32_t trainer = 0;
};
struct RegisterServerRequest {
  std::string endpoint;
  bool join = false;  // join a formed cluster
};
struct RegisterTrainerRequest {
  std::string name;
};
struct CheckpointRequest {
  std::string dir;  // checkpoint directory as the server sees it
  CheckpointAction action = CheckpointAction::kWrite;
};
struct BarrierRequest {
  std::string name;
  uint32_t count = 0;
};
struct CheckpointCutRequest {
  uint32_t trainer = 0;
  uint64_t clock = 0;
  bool done = false;  // false: arrive
  std::string error;  // done: why the coordinator failed (empty: it succeeded)
};
struct CheckpointNowRequest {
  std::string dir;
};
// ---- Server membership and partition moves (scheduler/shard_moves.h, ps/partition_mover.h) ----
struct MoveOrder {
  uint32_t partition = 0;
  uint32_t from = 0;  // server ids
  uint32_t to = 0;
  bool operator==(const MoveOrder&) const = default;
};
struct ServerHeartbeatRequest {
  uint32_t server = 0;
};
struct MoveDecisionRequest {
  MoveOrder move;
  bool commit = false;  // false: abort
  std::string reason;   // abort: why
};
struct DrainRequest {
  uint32_t server = 0;
};
struct ClusterStatusRequest {};
enum class TransferPhase : uint8_t { kCopy = 0, kHandover = 1, kRelease = 2, kResume = 3 };
struct PartitionTransferRequest {
  uint32_t partition = 0;
  TransferPhase phase = TransferPhase::kCopy;
};

using RequestBody = std::variant<PingRequest, PullRequest, PushRequest, StatsRequest,
                                 RegisterServerRequest, RegisterTrainerRequest,
                                 GetRoutingRequest, BarrierRequest, ApplyClockRequest,
                                 TrainerClockRequest, HeartbeatRequest, CheckpointRequest,
                                 CheckpointCutRequest, CheckpointNowRequest,
                                 ServerHeartbeatRequest, MoveDecisionRequest, DrainRequest,
                                 ClusterStatusRequest, PartitionTransferRequest>;

struct RequestHeader {
  uint64_t request_id = 0;
  uint64_t epoch = 0;  // routing epoch the sender used
};

// A decoded request. Spans inside `body` point into storage this object owns; it is movable and
// the spans stay valid across moves.
struct DecodedRequest {
  uint32_t version = 0;
  RequestHeader header;
  RequestBody body;
  std::shared_ptr<const void> storage;  // keeps the frame bytes alive
};

// Name of the request kind, for logs and errors ("pull", "push", ...).
std::string_view RequestKindName(const RequestBody& body);

// Decodes one frame. InvalidArgument (naming what was wrong) for anything malformed.
Result<DecodedRequest> DecodeRequest(Frame frame);

Frame EncodePing(const RequestHeader& header);
Frame EncodeStatsRequest(const RequestHeader& header);
Frame EncodeGetRouting(const RequestHeader& header);
Frame EncodePull(const RequestHeader& header, std::string_view table,
                          std::span<const uint64_t> keys);
// Keys are gathered as keys[positions[i]] when positions is non-empty (a sub-request of a batch).
Frame EncodePullSubset(const RequestHeader& header, std::string_view table,
                                std::span<const uint64_t> keys,
                                std::span<const uint32_t> positions,
                                RowFormat row_format = RowFormat::kF32);
Frame EncodePushSubset(const RequestHeader& header, std::string_view table,
                                std::span<const uint64_t> keys, std::span<const float> gradients,
                                uint32_t dim, std::span<const uint32_t> positions,
                                uint64_t clock, RowFormat gradient_format = RowFormat::kF32,
                                uint32_t trainer = 0, bool deferred = false,
                                const PushSender& sender = {});
Frame EncodePush(const RequestHeader& header, std::string_view table,
                          std::span<const uint64_t> keys, std::span<const float> gradients,
                          uint64_t clock);
Frame EncodeRegisterServer(const RequestHeader& header, std::string_view endpoint,
                                    bool join = false);
Frame EncodeRegisterTrainer(const RequestHeader& header, std::string_view name);
Frame EncodeBarrier(const RequestHeader& header, std::string_view name, uint32_t count);
Frame EncodeApplyClock(const RequestHeader& header, const ApplyClockRequest& apply);
Frame EncodeTrainerClock(const RequestHeader& header, const TrainerClockRequest& clock);
Frame EncodeHeartbeat(const RequestHeader& header, uint32_t trainer);
Frame EncodeCheckpoint(const RequestHeader& header, const CheckpointRequest& checkpoint);
Frame EncodeCheckpointCut(const RequestHeader& header, const CheckpointCutRequest& cut);
Frame EncodeCheckpointNow(const RequestHeader& header, std::string_view dir);
Frame EncodeServerHeartbeat(const RequestHeader& header, uint32_t server);
Frame EncodeMoveDecision(const RequestHeader& header, const MoveDecisionRequest& decision);
Frame EncodeDrain(const RequestHeader& header, uint32_t server);
Frame EncodeClusterStatusRequest(const RequestHeader& header);
Frame EncodePartitionTransfer(const RequestHeader& header,
                                       const PartitionTransferRequest& transfer);

// ---- Responses ----


struct Registration {
  uint32_t id = 0;
  std::vector<TableSpec> tables;
  RoutingTable routing;
  uint64_t clock = 0;  // trainers: the clock to start from
};


struct ServerOrders {
  RoutingTable routing;
  std::vector<MoveOrder> moves;  // moves this server runs (as target) now
  bool exit = false;             // drained: the server may stop
};


// The rows a partition transfer carries; points into the decoded frame.
struct PartitionData {
  std::span<const uint8_t> bytes;
};

struct NoPayload {};
using ResponseBody = std::variant<NoPayload, std::span<const float>, ServerStats, Registration,
                                  RoutingTable, ClockGrant, CutInfo, ServerOrders, ClusterStatus,
                                  PartitionData>;

struct DecodedResponse {
  uint64_t request_id = 0;
  uint64_t epoch = 0;    // responder's routing epoch
  Status status;         // the remote status, code and message preserved
  ResponseBody body;     // span<const float>: pulled rows (widened if sent as fp16), in `storage`
  std::shared_ptr<const void> storage;
};

Result<DecodedResponse> DecodeResponse(Frame frame);

// A response carrying only a status (OK or an error).
Frame EncodeStatusResponse(uint64_t request_id, uint64_t epoch, const Status& status);
// A pull reply with room for `num_floats` rows values; `fill` writes them in place (called once).
// If fill returns an error, the frame carries that error instead.
Frame EncodePullResponse(uint64_t request_id, uint64_t epoch, size_t num_floats,
                                  const std::function<Status(std::span<float>)>& fill,
                                  RowFormat row_format = RowFormat::kF32);
Frame EncodeStatsResponse(uint64_t request_id, uint64_t epoch, const ServerStats& stats);
Frame EncodeRegistrationResponse(uint64_t request_id, const Registration& registration);
Frame EncodeRoutingResponse(uint64_t request_id, const RoutingTable& routing);
Frame EncodeClockGrantResponse(uint64_t request_id, uint64_t epoch,
                                        const ClockGrant& grant);
Frame EncodeCutInfoResponse(uint64_t request_id, uint64_t epoch, const CutInfo& cut);
Frame EncodeServerOrdersResponse(uint64_t request_id, const ServerOrders& orders);
Frame EncodeClusterStatusResponse(uint64_t request_id, const ClusterStatus& status);
// A partition transfer's reply with room for `bytes`; `fill` writes them in place.
Frame EncodePartitionDataResponse(uint64_t request_id, uint64_t epoch, size_t bytes,
                                           const std::function<void(std::span<uint8_t>)>& fill);

}  // namespace ember::wire
