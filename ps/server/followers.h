// Followers: the serving replicas a server streams changed rows to (wire::FollowRequest).
//
// A stream is one follower (a replica's random id) of one table. It follows the partitions it
// started that this server serves; each follow request answers with the rows of those partitions
// changed since the previous one (weights only, no optimizer state), and the keys deleted since,
// up to a number of rows: the table's change marks (EmbeddingTable::Follow) say which keys
// changed, and a partition just started comes whole. Keys taken from the marks but not sent yet
// wait in the stream, so nothing is lost between requests: a row that changes again after being
// taken is marked again and sent again.
//
// A partition this server stops serving (moved away) is reported lost, once, and dropped from the
// stream: its new owner streams it when the replica starts it there. One being handed over is
// skipped until the move is decided. A stream not asked for `idle_timeout` is forgotten, and at
// most limits.followers streams are kept (a new one beyond is refused and counted).
//
// Thread-safety: Follow may be called from many threads; streams are served one at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/limits.h"
#include "common/status.h"
#include "common/wire.h"
#include "embedding/embedding_table.h"

namespace ember::ps {

// What one follow request is answered with (wire::FollowedRows, owning its arrays).
struct FollowBatch {
  std::vector<uint64_t> keys;
  std::vector<float> rows;  // keys.size() * dim
  std::vector<uint64_t> deleted;
  std::vector<uint32_t> following;
  std::vector<uint32_t> lost;
  bool more = false;
  wire::FollowedRows View() const {
    return {keys, rows, deleted, following, lost, more};
  }
};

// How a partition stands for a stream, from the server's ownership (partition_ownership.h).
enum class FollowedPartition { kServed, kHeld, kGone };

class Followers {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr uint32_t kDefaultMaxRows = 16'384;
  // The reply's rows fit in about this many bytes (at least one row).
  static constexpr uint64_t kMaxReplyBytes = uint64_t{32} << 20;

  Followers(uint32_t max_streams, std::chrono::milliseconds idle_timeout)
      : max_streams_(max_streams), idle_timeout_(idle_timeout) {}
  Followers(const Followers&) = delete;
  Followers& operator=(const Followers&) = delete;

  // Answers `request` over `table` (the table it names). `partition_state(p)` says whether this
  // server serves p. FailedPrecondition when the stream is unknown (forgotten, or this server
  // restarted) and the request starts nothing: the replica starts its partitions again.
  Result<FollowBatch> Follow(const wire::FollowRequest& request, embedding::EmbeddingTable& table,
                             const std::function<FollowedPartition(uint32_t)>& partition_state,
                             LimitCounters& limits_hit, Clock::time_point now = Clock::now());

  size_t streams() const;

 private:
  struct Stream {
    embedding::EmbeddingTable* table = nullptr;
    Clock::time_point last_asked;
    std::map<uint32_t, std::vector<uint64_t>> due;  // partition -> keys taken, not sent yet
    uint32_t next = 0;  // the partition the next request begins with (round robin)
  };
  using StreamId = std::pair<uint64_t, std::string>;  // follower, table

  void ForgetIdle(Clock::time_point now);
  // Clears the table's marks of the stream's partitions.
  static void Unfollow(uint64_t follower, Stream& stream);
  // Sends up to `budget` rows of the stream's due keys, taking new ones from the table's marks.
  static Status Gather(Stream& stream, uint64_t follower, uint32_t budget,
                       const std::function<FollowedPartition(uint32_t)>& partition_state,
                       FollowBatch& batch);
  // Moves up to `budget` of `keys` into the batch's keys, to be read by ReadRows.
  static void MoveDueKeys(std::vector<uint64_t>& keys, uint32_t budget, FollowBatch& batch);
  // Reads the rows of the batch's keys in one lookup (a partition's rows under its stripe's lock
  // at once; a row changed since its key was taken is marked again, so it comes again); keys
  // without a row move to the batch's deleted keys.
  static Status ReadRows(const embedding::EmbeddingTable& table, FollowBatch& batch);

  const uint32_t max_streams_;
  const std::chrono::milliseconds idle_timeout_;
  mutable std::mutex mutex_;
  std::map<StreamId, Stream> streams_;
};

}  // namespace ember::ps
