// The data plane of the wire codec: what trainers ask of servers on every step (pull, push) and
// the small requests beside them (ping, stats), with their replies.
//
// Part of common/wire.h, which includes this header and decodes these messages. Pulls, pushes
// and pull replies are built in place: their keys, gradients and rows are written once, straight
// into the memory of the outgoing frame. Spans in decoded requests point into the frame the
// DecodedRequest owns.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "common/frame.h"
#include "common/row_format.h"
#include "common/server_stats.h"
#include "common/status.h"
#include "common/wire_header.h"

namespace ember::wire {

using ember::RowFormat;
using ember::ServerStats;
using ember::TableStats;

// ---- Requests ----

struct PingRequest {
  static constexpr std::string_view kName = "ping";
};
struct StatsRequest {
  static constexpr std::string_view kName = "stats";
};
struct PullRequest {
  static constexpr std::string_view kName = "pull";
  std::string table;
  std::span<const uint64_t> keys;          // points into the decoded frame
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
  static constexpr std::string_view kName = "push";
  std::string table;
  std::span<const uint64_t> keys;
  std::span<const float> gradients;  // keys.size() * dim, row-major (widened if sent as fp16)
  uint64_t clock = 0;
  uint32_t trainer = 0;   // sender's trainer id
  bool deferred = false;  // bsp: hold until an ApplyClockRequest for `clock`
  PushSender sender;
};

Frame EncodePing(const RequestHeader& header);
Frame EncodeStatsRequest(const RequestHeader& header);
Frame EncodePull(const RequestHeader& header, std::string_view table,
                 std::span<const uint64_t> keys);
// Keys are gathered as keys[positions[i]] when positions is non-empty (a sub-request of a batch).
Frame EncodePullSubset(const RequestHeader& header, std::string_view table,
                       std::span<const uint64_t> keys, std::span<const uint32_t> positions,
                       RowFormat row_format = RowFormat::kF32);
// Gradients of key i are gradients[i * dim, (i + 1) * dim), gathered by position like the keys.
Frame EncodePushSubset(const RequestHeader& header, std::string_view table,
                       std::span<const uint64_t> keys, std::span<const float> gradients,
                       uint32_t dim, std::span<const uint32_t> positions, uint64_t clock,
                       RowFormat gradient_format = RowFormat::kF32, uint32_t trainer = 0,
                       bool deferred = false, const PushSender& sender = {});
Frame EncodePush(const RequestHeader& header, std::string_view table,
                 std::span<const uint64_t> keys, std::span<const float> gradients, uint64_t clock);

// ---- Responses (decoded as span<const float> rows and ServerStats) ----

// A pull reply with room for `num_floats` rows values; `fill` writes them in place (called once).
// If fill returns an error, the frame carries that error instead.
Frame EncodePullResponse(uint64_t request_id, uint64_t epoch, size_t num_floats,
                         const std::function<Status(std::span<float>)>& fill,
                         RowFormat row_format = RowFormat::kF32);
Frame EncodeStatsResponse(uint64_t request_id, uint64_t epoch, const ServerStats& stats);

}  // namespace ember::wire
