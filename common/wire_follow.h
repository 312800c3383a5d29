// The stream of changed rows on the wire: a serving replica's follow request to a training server
// (ps/server/followers.h) and the changed rows it is answered with.
//
// Part of common/wire.h, which includes this header and decodes these messages.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/frame.h"
#include "common/wire_header.h"

namespace ember::wire {

// The most partitions one follow request may start.
constexpr size_t kMaxStartsPerFollow = 1u << 16;

// ---- Request ----

// The rows of `table` changed since this follower's last request; partitions in `start` are
// followed from now on, every row of them first. Readers and trainers may send it: it reads rows
// and changes none.
struct FollowRequest {
  static constexpr std::string_view kName = "follow";
  static constexpr PeerRoles kSenders = kTrainers | kReaders;
  uint64_t follower = 0;  // the replica's random id, non-zero
  std::string table;
  std::vector<uint32_t> start;
  uint32_t max_rows = 0;  // 0: the server's default
  bool leave = false;     // stop: the server forgets this follower of `table`
};

Frame EncodeFollow(const RequestHeader& header, const FollowRequest& follow);

// ---- Response ----

struct FollowedRows {
  std::span<const uint64_t> keys;     // points into the decoded frame
  std::span<const float> rows;        // keys.size() * dim
  std::span<const uint64_t> deleted;  // keys whose rows no longer exist
  std::vector<uint32_t> following;    // partitions the server streams to the follower now
  std::vector<uint32_t> lost;         // partitions it stopped streaming (not owned any more)
  bool more = false;                  // more changed rows wait
};

Frame EncodeFollowResponse(uint64_t request_id, uint64_t epoch, const FollowedRows& followed);

}  // namespace ember::wire
