// The wire codec: ember messages <-> transport frames (common/frame.h), through the schema in
// common/ember.capnp.
//
// This is the only place that reads Cap'n Proto messages. Decoding validates the frame (size,
// alignment, segment table, traversal limits, field sizes) and turns it into plain C++ views;
// every Cap'n Proto exception stops here and becomes an InvalidArgument Status, so a malformed or
// truncated frame can never take a process down. Encoders write bulk arrays (keys, rows,
// gradients) as raw little-endian bytes straight into the outgoing frame.
//
// This header is the envelope every message travels in: the request header, the bodies a request
// or a response may carry, and the two decoders. The messages themselves, with their encoders,
// are grouped by topic in the headers it includes:
//   common/wire_data_plane.h  ping, pull, push, stats, lookup, hint
//   common/wire_membership.h  registration, routing, barriers, clocks, heartbeats, drain, status
//   common/wire_moves.h       server orders, partition moves and transfers, checkpoints
//
// Thread-safety: all functions are reentrant; decoded objects are plain values.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <variant>

#include "common/frame.h"
#include "common/status.h"
#include "common/wire_data_plane.h"
#include "common/wire_header.h"
#include "common/wire_follow.h"
#include "common/wire_membership.h"
#include "common/wire_moves.h"

namespace ember::wire {

// ---- Requests ----

using RequestBody =
    std::variant<PingRequest, PullRequest, PushRequest, StatsRequest, RegisterServerRequest,
                 RegisterTrainerRequest, GetRoutingRequest, BarrierRequest, ApplyClockRequest,
                 TrainerClockRequest, HeartbeatRequest, CheckpointRequest, CheckpointCutRequest,
                 CheckpointNowRequest, ServerHeartbeatRequest, MoveDecisionRequest, DrainRequest,
                 ClusterStatusRequest, PartitionTransferRequest, LookupRequest, HintRequest,
                 RegisterReaderRequest, FollowRequest>;

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
// Who may send the request (its kind's kSenders, or what its fields ask for).
PeerRoles SendersOf(const RequestBody& body);
// PermissionDenied naming the kind, the roles it needs and the peer when `peer` may not send it.
Status CheckSender(const Peer& peer, const RequestBody& body);

// Decodes one frame. InvalidArgument (naming what was wrong) for anything malformed. When the
// frame is a readable message, `request_id` (if given) gets its request id, also when its body
// is refused: the refusal can then answer that request.
Result<DecodedRequest> DecodeRequest(Frame frame, uint64_t* request_id = nullptr);
// Whether `frame` holds a pull, push, lookup or hint, read from its kind alone (a copy only of a
// frame that is not word-aligned): a server with one worker thread serves these on the thread
// that reads its socket. Nothing else is checked (DecodeRequest does that); false for any other
// kind and for a frame that is not a readable message.
bool IsDataPlaneRequest(const Frame& frame);

// ---- Responses ----

struct NoPayload {};
using ResponseBody =
    std::variant<NoPayload, std::span<const float>, ServerStats, Registration, RoutingTable,
                 ClockGrant, CutInfo, ServerOrders, ClusterStatus, PartitionData, LookupRows,
                 FollowedRows>;

struct DecodedResponse {
  uint64_t request_id = 0;
  uint64_t epoch = 0;  // responder's routing epoch
  Status status;       // the remote status, code and message preserved
  ResponseBody body;   // span<const float>: pulled rows (widened if sent as fp16), in `storage`
  std::shared_ptr<const void> storage;
};

// Decodes one frame. InvalidArgument (naming what was wrong) for anything malformed.
Result<DecodedResponse> DecodeResponse(Frame frame);

// A response carrying only a status (OK or an error), the answer to any request.
Frame EncodeStatusResponse(uint64_t request_id, uint64_t epoch, const Status& status);

}  // namespace ember::wire
