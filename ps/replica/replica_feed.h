// ReplicaFeed: what keeps a serving replica fresh, the follower side of the stream of changed
// rows (ps/server/followers.h, wire::FollowRequest).
//
// A round asks every training server, for every table, for the rows changed since the round
// before (starting, on each server, the partitions the routing table gives it, which then come
// whole), and applies all the answers to the ReplicaStore at once. Rounds follow each other at
// once while a server has more to send, and every `poll_interval` otherwise.
//
// What it survives:
// - A server that does not answer (down, restarting, the stream lost): it is asked again next
//   round; nothing it changed meanwhile is lost, since its marks keep collecting.
// - A server that forgot the stream (restarted, or the stream idled out): it says so, and the
//   replica starts that server's partitions again, whole.
// - A partition that moved: an answer with a newer routing epoch makes the feed fetch the routing
//   table; rows are taken for a partition only from the server the routing table names, and a
//   partition is started on its new owner.
//
// Thread-safety: one thread runs the rounds; stats() may be read from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/rpc_channel.h"
#include "common/routing_table.h"
#include "common/status.h"
#include "common/transport.h"
#include "ps/client/scheduler_client.h"
#include "ps/replica/replica_store.h"

namespace ember::ps {

struct FeedOptions {
  Millis poll_interval{20};    // between rounds when no server had more to send
  uint32_t max_rows = 16'384;  // rows one server sends per table and round at most
  Millis request_timeout{10'000};
};

// What the feed did, for logs, metrics and the freshness benchmark.
struct FeedStats {
  uint64_t rounds = 0;
  uint64_t rows = 0;       // rows received (applied or not)
  uint64_t deleted = 0;    // deletions received
  uint64_t bytes = 0;      // bytes of the follow replies
  uint64_t restarts = 0;   // streams started again (a server forgot them)
  uint64_t failures = 0;   // follow requests that failed (a server down, say)
  uint64_t routing_changes = 0;
  bool caught_up = false;  // a round found nothing more waiting on any server
};

class ReplicaFeed {
 public:
  // `context`, `scheduler` and `store` are borrowed and outlive the feed. `routing` is the
  // training cluster's, from the replica's registration.
  ReplicaFeed(Context& context, SchedulerClient& scheduler, ReplicaStore& store,
              RoutingTable routing, FeedOptions options);
  ~ReplicaFeed();

  // One round; whether a server had more to send.
  Result<bool> Round();
  // Rounds until `stop`; failures are logged and retried.
  void Run(const std::atomic<bool>& stop);
  // Tells every server to forget the streams (best effort), e.g. at a clean stop.
  void Leave();

  FeedStats stats() const;

 private:
  using StreamKey = std::pair<uint32_t, std::string>;  // server id, table
  // Asks `server` for `table`'s changes; adds the rows it may take to `changes`.
  Status Follow(const ServerInfo& server, const std::string& table, TableChanges& changes,
                bool& more, uint64_t& newest_epoch);
  // The partitions `server` owns, to start there.
  std::vector<uint32_t> OwnedBy(uint32_t server) const;
  // A newer routing table: partitions that changed owner start on their new owner.
  Status RefreshRouting();
  RpcChannel& ChannelTo(const ServerInfo& server);

  Context& context_;
  SchedulerClient& scheduler_;
  ReplicaStore& store_;
  const FeedOptions options_;
  const uint64_t follower_id_;
  RoutingTable routing_;
  std::map<StreamKey, std::vector<uint32_t>> to_start_;
  std::map<std::string, std::unique_ptr<RpcChannel>> channels_;  // by endpoint
  mutable std::mutex stats_mutex_;
  FeedStats stats_;
};

}  // namespace ember::ps
