// The data plane of the wire codec: what trainers ask of servers on every step (pull, push) and
// the small requests beside them (ping, stats), with their replies; the read-only lookup a
// serving system sends (a pull that creates nothing); and the hint a trainer with look-ahead sends
// for a batch it will use a few steps later.
//
// Part of common/wire.h, which includes this header and decodes these messages. Pulls, pushes
// and pull replies are built in place: their keys, gradients and rows are written once, straight
// into the memory of the outgoing frame. Spans in decoded requests point into the frame the
// DecodedRequest owns.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/frame.h"
#include "common/missing_rows.h"
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
  static constexpr PeerRoles kSenders = kAnyRole;
};
struct StatsRequest {
  static constexpr std::string_view kName = "stats";
  static constexpr PeerRoles kSenders = kAnyRole;
};
// One table's keys in a pull.
struct TableKeys {
  std::string table;
  std::span<const uint64_t> keys;  // points into the decoded frame
};
// The most tables one pull may name.
constexpr size_t kMaxTablesPerPull = 64;
// A pull of one or more tables' keys (a trainer's step asks for all of its tables at once); the
// reply holds their rows in that order, each table's at its own dim.
struct PullRequest {
  static constexpr std::string_view kName = "pull";
  static constexpr PeerRoles kSenders = kTrainers;
  std::vector<TableKeys> tables;           // 1 to kMaxTablesPerPull
  RowFormat row_format = RowFormat::kF32;  // of the reply's rows
};
// A read-only pull (serving): readers and trainers may send it (and admins, who act as trainers).
// The server reads rows without creating, admitting or loading them into memory.
struct LookupRequest {
  static constexpr std::string_view kName = "lookup";
  static constexpr PeerRoles kSenders = kTrainers | kReaders;
  std::string table;
  std::span<const uint64_t> keys;          // points into the decoded frame
  RowFormat row_format = RowFormat::kF32;  // of the reply's rows
  MissingRows missing = MissingRows::kInitial;
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
  static constexpr PeerRoles kSenders = kTrainers;
  std::string table;
  std::span<const uint64_t> keys;
  std::span<const float> gradients;  // keys.size() * dim, row-major (widened if sent as fp16)
  uint64_t clock = 0;
  uint32_t trainer = 0;   // sender's trainer id
  bool deferred = false;  // bsp: hold until an ApplyClockRequest for `clock`
  PushSender sender;
  uint64_t release_hint = 0;  // non-zero: the hint of sender.id that announced these keys
  float learning_rate = 0;    // > 0: this step's learning rate in place of the table's
};
// Which hint: the sender's own id for it, and the sender (a client's random id), both non-zero.
struct HintId {
  uint64_t hint = 0;
  uint64_t sender = 0;
};
// Look-ahead: the keys of a batch the sender will pull and push a few steps later, for the server
// to read into memory and pin until a push names the hint (PushRequest::release_hint) or ttl_ms
// passes. Advisory: nothing but speed depends on it.
struct HintRequest {
  static constexpr std::string_view kName = "hint";
  static constexpr PeerRoles kSenders = kTrainers;
  std::string table;
  std::span<const uint64_t> keys;  // points into the decoded frame
  uint64_t hint = 0;
  uint64_t sender = 0;
  uint32_t ttl_ms = 0;
};

Frame EncodePing(const RequestHeader& header);
Frame EncodeStatsRequest(const RequestHeader& header);
Frame EncodePull(const RequestHeader& header, std::string_view table,
                 std::span<const uint64_t> keys);
// Keys are gathered as keys[positions[i]] when positions is non-empty (a sub-request of a batch).
Frame EncodePullSubset(const RequestHeader& header, std::string_view table,
                       std::span<const uint64_t> keys, std::span<const uint32_t> positions,
                       RowFormat row_format = RowFormat::kF32);
// A table's keys to encode: keys[positions[i]], or all of them when positions is empty.
struct KeysToSend {
  std::string_view table;
  std::span<const uint64_t> keys;
  std::span<const uint32_t> positions;
};
// One pull of several tables' keys (1 to kMaxTablesPerPull), in the order given.
Frame EncodePullTables(const RequestHeader& header, std::span<const KeysToSend> tables,
                       RowFormat row_format = RowFormat::kF32);
// A lookup of keys[positions[i]] (all keys when positions is empty), as EncodePullSubset.
Frame EncodeLookupSubset(const RequestHeader& header, std::string_view table,
                         std::span<const uint64_t> keys, std::span<const uint32_t> positions,
                         RowFormat row_format, MissingRows missing);
// Gradients of key i are gradients[i * dim, (i + 1) * dim), gathered by position like the keys.
Frame EncodePushSubset(const RequestHeader& header, std::string_view table,
                       std::span<const uint64_t> keys, std::span<const float> gradients,
                       uint32_t dim, std::span<const uint32_t> positions, uint64_t clock,
                       RowFormat gradient_format = RowFormat::kF32, uint32_t trainer = 0,
                       bool deferred = false, const PushSender& sender = {},
                       uint64_t release_hint = 0, float learning_rate = 0);
// A hint of keys[positions[i]] (all keys when positions is empty), as EncodePullSubset.
Frame EncodeHintSubset(const RequestHeader& header, std::string_view table,
                       std::span<const uint64_t> keys, std::span<const uint32_t> positions,
                       const HintId& id, uint32_t ttl_ms);
Frame EncodePush(const RequestHeader& header, std::string_view table,
                 std::span<const uint64_t> keys, std::span<const float> gradients, uint64_t clock);

// ---- Responses (decoded as span<const float> rows, LookupRows and ServerStats) ----

// A decoded lookup reply; both spans point into the decoded frame (rows widened if sent as fp16).
struct LookupRows {
  std::span<const float> rows;     // n * dim, in request key order
  std::span<const uint8_t> found;  // n flags, 1 where the key has a row, 0 where not
};

// The most bytes one bulk blob (a pull reply's rows, a request's keys or gradients) can carry:
// Cap'n Proto counts a Data blob's bytes in 29 bits.
constexpr size_t kMaxBulkBytes = (size_t{1} << 29) - 1;

// OK when a pull reply of `num_floats` values in `row_format` fits in one frame; otherwise
// InvalidArgument naming the reply's size and the limit. Checked before any row is looked up.
Status CheckPullReplySize(size_t num_floats, RowFormat row_format = RowFormat::kF32);

// A pull reply under construction: the server writes the rows straight into the outgoing frame
// (rows() is the frame's own memory for fp32, a float32 scratch narrowed by Finish for fp16),
// then sends Finish(), or Fail(status) when it could not fill them.
//
// A lookup reply is built the same way, with its found flags (found(), every byte written by the
// caller) beside the rows.
//
// One thread; rows() is valid until Finish or Fail. The reply must fit: CheckPullReplySize.
class PullReply {
 public:
  PullReply(uint64_t request_id, uint64_t epoch, size_t num_floats,
            RowFormat row_format = RowFormat::kF32);
  // The shape of a lookup reply: `found_flags` bytes of found flags (one per key).
  struct Lookup {
    size_t found_flags = 0;
  };
  PullReply(uint64_t request_id, uint64_t epoch, size_t num_floats, RowFormat row_format,
            Lookup lookup);
  ~PullReply();
  PullReply(const PullReply&) = delete;
  PullReply& operator=(const PullReply&) = delete;

  std::span<float> rows();
  // A lookup reply's found flags (empty for a pull reply).
  std::span<uint8_t> found() { return found_; }
  // The reply carrying every value of rows().
  Frame Finish();
  // A reply carrying `status` (an error) instead of rows.
  Frame Fail(const Status& status);

 private:
  struct Builder;  // the Cap'n Proto message, private to wire_data_plane.cc
  PullReply(uint64_t request_id, uint64_t epoch, size_t num_floats, RowFormat row_format,
            std::optional<Lookup> lookup);
  // Bytes of the reply's blobs, each padded to a word.
  static size_t BulkBytes(size_t num_floats, RowFormat row_format,
                          const std::optional<Lookup>& lookup);
  const uint64_t request_id_;
  const uint64_t epoch_;
  const RowFormat row_format_;
  std::unique_ptr<Builder> builder_;
  std::span<float> rows_;
  std::span<uint8_t> found_;
};

// A whole pull reply at once, through PullReply: `fill` writes the rows in place (called once);
// if it returns an error, the frame carries that error instead.
Frame EncodePullResponse(uint64_t request_id, uint64_t epoch, size_t num_floats,
                         const std::function<Status(std::span<float>)>& fill,
                         RowFormat row_format = RowFormat::kF32);
// A whole lookup reply at once: `fill` writes the rows and the `found_flags` found flags.
Frame EncodeLookupResponse(uint64_t request_id, uint64_t epoch, size_t num_floats,
                           size_t found_flags,
                           const std::function<Status(std::span<float>, std::span<uint8_t>)>& fill,
                           RowFormat row_format = RowFormat::kF32);
Frame EncodeStatsResponse(uint64_t request_id, uint64_t epoch, const ServerStats& stats);

}  // namespace ember::wire
