// The wire codec: ember messages <-> ZeroMQ frames, through the schema in common/ember.capnp.
//
// This is the only place that reads Cap'n Proto messages. Decoding validates the frame (size,
// alignment, segment table, traversal limits, field sizes) and turns it into plain C++ views;
// every Cap'n Proto exception stops here and becomes an InvalidArgument Status, so a malformed or
// truncated frame can never take a process down. Encoders write bulk arrays (keys, rows,
// gradients) as raw little-endian bytes straight into the outgoing frame.
//
// Thread-safety: all functions are reentrant; decoded objects are plain values.
#pragma once

#include <zmq.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/routing_table.h"
#include "common/status.h"
#include "common/sync_options.h"
#include "common/table_spec.h"

namespace ember::wire {

constexpr uint32_t kProtocolVersion = 1;  // == protocolVersion in ember.capnp

// Largest frame a process accepts; sized for the biggest legitimate batch (2M keys x dim 64).
constexpr size_t kMaxFrameBytes = size_t{1} << 30;

// How row values travel (servers always store float32). fp16 halves the bytes of rows and
// gradients at a relative rounding error of at most 2^-11 for normal values.
enum class RowFormat : uint8_t { kF32 = 0, kF16 = 1 };

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
enum class CheckpointAction : uint8_t { kWrite = 0, kRestore = 1, kVerify = 2 };
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
Result<DecodedRequest> DecodeRequest(zmq::message_t frame);

zmq::message_t EncodePing(const RequestHeader& header);
zmq::message_t EncodeStatsRequest(const RequestHeader& header);
zmq::message_t EncodeGetRouting(const RequestHeader& header);
zmq::message_t EncodePull(const RequestHeader& header, std::string_view table,
                          std::span<const uint64_t> keys);
// Keys are gathered as keys[positions[i]] when positions is non-empty (a sub-request of a batch).
zmq::message_t EncodePullSubset(const RequestHeader& header, std::string_view table,
                                std::span<const uint64_t> keys,
                                std::span<const uint32_t> positions,
                                RowFormat row_format = RowFormat::kF32);
zmq::message_t EncodePushSubset(const RequestHeader& header, std::string_view table,
                                std::span<const uint64_t> keys, std::span<const float> gradients,
                                uint32_t dim, std::span<const uint32_t> positions,
                                uint64_t clock, RowFormat gradient_format = RowFormat::kF32,
                                uint32_t trainer = 0, bool deferred = false,
                                const PushSender& sender = {});
zmq::message_t EncodePush(const RequestHeader& header, std::string_view table,
                          std::span<const uint64_t> keys, std::span<const float> gradients,
                          uint64_t clock);
zmq::message_t EncodeRegisterServer(const RequestHeader& header, std::string_view endpoint,
                                    bool join = false);
zmq::message_t EncodeRegisterTrainer(const RequestHeader& header, std::string_view name);
zmq::message_t EncodeBarrier(const RequestHeader& header, std::string_view name, uint32_t count);
zmq::message_t EncodeApplyClock(const RequestHeader& header, const ApplyClockRequest& apply);
zmq::message_t EncodeTrainerClock(const RequestHeader& header, const TrainerClockRequest& clock);
zmq::message_t EncodeHeartbeat(const RequestHeader& header, uint32_t trainer);
zmq::message_t EncodeCheckpoint(const RequestHeader& header, const CheckpointRequest& checkpoint);
zmq::message_t EncodeCheckpointCut(const RequestHeader& header, const CheckpointCutRequest& cut);
zmq::message_t EncodeCheckpointNow(const RequestHeader& header, std::string_view dir);
zmq::message_t EncodeServerHeartbeat(const RequestHeader& header, uint32_t server);
zmq::message_t EncodeMoveDecision(const RequestHeader& header, const MoveDecisionRequest& decision);
zmq::message_t EncodeDrain(const RequestHeader& header, uint32_t server);
zmq::message_t EncodeClusterStatusRequest(const RequestHeader& header);
zmq::message_t EncodePartitionTransfer(const RequestHeader& header,
                                       const PartitionTransferRequest& transfer);

// ---- Responses ----

struct TableStats {
  std::string name;
  uint64_t rows = 0;
  uint64_t bytes = 0;
  uint64_t resident_rows = 0;
  uint64_t disk_bytes = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  uint64_t not_admitted = 0;
  uint64_t updates_dropped = 0;
  uint64_t expired = 0;
};

struct ServerStats {
  uint32_t server_id = 0;
  std::vector<TableStats> tables;
  uint64_t pull_requests = 0;
  uint64_t push_requests = 0;
  uint64_t keys_pulled = 0;
  uint64_t keys_pushed = 0;
  uint64_t errors = 0;
  uint32_t partitions_owned = 0;
};

struct Registration {
  uint32_t id = 0;
  std::vector<TableSpec> tables;
  RoutingTable routing;
  uint64_t clock = 0;  // trainers: the clock to start from
};

// A checkpoint cut: the clock after which it is taken and where.
struct CutInfo {
  uint64_t clock = 0;      // 0: no cut
  std::string dir;
  uint32_t keep = 0;       // periodic cuts: newest step-* directories to keep beside dir; 0: all
  bool coordinate = false; // answer to an arrival: this trainer completes the cut
};

struct ClockGrant {
  uint64_t clock = 0;
  std::vector<uint32_t> trainers;  // whose pushes of `clock` count
  uint64_t min_clock = 0;          // slowest live trainer's clock when granted
  CutInfo cut;                     // a cut announced for a later clock (cut.clock > clock), if any
};

struct ServerOrders {
  RoutingTable routing;
  std::vector<MoveOrder> moves;  // moves this server runs (as target) now
  bool exit = false;             // drained: the server may stop
};

struct ServerStatus {
  uint32_t id = 0;
  std::string endpoint;
  std::string state;  // live, draining, drained, dead
  uint32_t partitions = 0;
};

struct ClusterStatus {
  RoutingTable routing;
  std::vector<ServerStatus> servers;
  uint32_t moves_in_flight = 0;
  uint32_t moves_planned = 0;
  uint64_t moves_done = 0;
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

Result<DecodedResponse> DecodeResponse(zmq::message_t frame);

// A response carrying only a status (OK or an error).
zmq::message_t EncodeStatusResponse(uint64_t request_id, uint64_t epoch, const Status& status);
// A pull reply with room for `num_floats` rows values; `fill` writes them in place (called once).
// If fill returns an error, the frame carries that error instead.
zmq::message_t EncodePullResponse(uint64_t request_id, uint64_t epoch, size_t num_floats,
                                  const std::function<Status(std::span<float>)>& fill,
                                  RowFormat row_format = RowFormat::kF32);
zmq::message_t EncodeStatsResponse(uint64_t request_id, uint64_t epoch, const ServerStats& stats);
zmq::message_t EncodeRegistrationResponse(uint64_t request_id, const Registration& registration);
zmq::message_t EncodeRoutingResponse(uint64_t request_id, const RoutingTable& routing);
zmq::message_t EncodeClockGrantResponse(uint64_t request_id, uint64_t epoch,
                                        const ClockGrant& grant);
zmq::message_t EncodeCutInfoResponse(uint64_t request_id, uint64_t epoch, const CutInfo& cut);
zmq::message_t EncodeServerOrdersResponse(uint64_t request_id, const ServerOrders& orders);
zmq::message_t EncodeClusterStatusResponse(uint64_t request_id, const ClusterStatus& status);
// A partition transfer's reply with room for `bytes`; `fill` writes them in place.
zmq::message_t EncodePartitionDataResponse(uint64_t request_id, uint64_t epoch, size_t bytes,
                                           const std::function<void(std::span<uint8_t>)>& fill);

}  // namespace ember::wire
