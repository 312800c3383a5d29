// ReplicaFeed: rounds of follow requests to the training servers (replica_feed.h).
#include "ps/replica/replica_feed.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "common/hash.h"
#include "common/random_id.h"
#include "common/wire.h"

namespace ember::ps {
ReplicaFeed::ReplicaFeed(Context& context, SchedulerClient& scheduler, ReplicaStore& store,
                         RoutingTable routing, FeedOptions options)
    : context_(context),
      scheduler_(scheduler),
      store_(store),
      options_(options),
      follower_id_(RandomId()),
      routing_(std::move(routing)) {
  for (const ServerInfo& server : routing_.servers) {
    for (const TableSpec& table : store_.tables()) {
      to_start_[{server.id, table.name}] = OwnedBy(server.id);
    }
  }
}

ReplicaFeed::~ReplicaFeed() = default;

FeedStats ReplicaFeed::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

std::vector<uint32_t> ReplicaFeed::OwnedBy(uint32_t server) const {
  std::vector<uint32_t> owned;
  for (uint32_t p = 0; p < routing_.num_partitions; ++p) {
    if (routing_.owners[p] == server) owned.push_back(p);
  }
  return owned;
}

RpcChannel& ReplicaFeed::ChannelTo(const ServerInfo& server) {
  std::unique_ptr<RpcChannel>& channel = channels_[server.endpoint];
  if (!channel) channel = std::make_unique<RpcChannel>(context_, server.endpoint, server.public_key);
  return *channel;
}

Status ReplicaFeed::Follow(const ServerInfo& server, const std::string& table,
                           TableChanges& changes, bool& more, uint64_t& newest_epoch) {
  const StreamKey key{server.id, table};
  RpcChannel& channel = ChannelTo(server);
  const uint64_t id = channel.NextRequestId();
  wire::FollowRequest request{.follower = follower_id_, .table = table, .start = {},
                              .max_rows = options_.max_rows};
  if (auto start = to_start_.find(key); start != to_start_.end()) request.start = start->second;
  auto reply = channel.Call(id, wire::EncodeFollow({id, routing_.epoch}, request),
                            options_.request_timeout);
  if (!reply.ok()) {
    channels_.erase(server.endpoint);  // a fresh connection next round
    return reply.status();
  }
  if (reply->status.code() == StatusCode::kFailedPrecondition) {
    // The server forgot the stream (it restarted, or the stream idled out): start it again.
    to_start_[key] = OwnedBy(server.id);
    more = true;
    std::lock_guard lock(stats_mutex_);
    ++stats_.restarts;
    return Status::Ok();
  }
  if (!reply->status.ok()) return reply->status;
  const auto* followed = std::get_if<wire::FollowedRows>(&reply->body);
  if (followed == nullptr) return Internal("a follow request was answered without rows");
  to_start_.erase(key);
  for (uint32_t p : followed->lost) {
    // Ours by the routing table, not served there yet (a move still landing): ask again.
    if (p < routing_.owners.size() && routing_.owners[p] == server.id) to_start_[key].push_back(p);
  }
  newest_epoch = std::max(newest_epoch, reply->epoch);
  more = more || followed->more;
  const uint64_t table_id = HashName(table);
  auto owned_here = [&](uint64_t k) {
    return routing_.owners[PartitionOf(table_id, k, routing_.num_partitions)] == server.id;
  };
  const size_t dim = followed->keys.empty() ? 0 : followed->rows.size() / followed->keys.size();
  for (size_t i = 0; i < followed->keys.size(); ++i) {
    if (!owned_here(followed->keys[i])) continue;
    changes.keys.push_back(followed->keys[i]);
    changes.rows.insert(changes.rows.end(), followed->rows.begin() + i * dim,
                        followed->rows.begin() + (i + 1) * dim);
  }
  for (uint64_t k : followed->deleted) {
    if (owned_here(k)) changes.deleted.push_back(k);
  }
  std::lock_guard lock(stats_mutex_);
  stats_.rows += followed->keys.size();
  stats_.deleted += followed->deleted.size();
  stats_.bytes += followed->keys.size_bytes() + followed->rows.size_bytes() +
                  followed->deleted.size_bytes();
  return Status::Ok();
}

Result<bool> ReplicaFeed::Round() {
  std::vector<TableChanges> round;
  bool more = false;
  bool failed = false;
  uint64_t newest_epoch = routing_.epoch;
  Status first_failure;
  for (const TableSpec& table : store_.tables()) {
    TableChanges changes{.table = table.name, .keys = {}, .rows = {}, .deleted = {}};
    for (const ServerInfo& server : routing_.servers) {
      Status followed = Follow(server, table.name, changes, more, newest_epoch);
      if (followed.ok()) continue;
      if (!failed) first_failure = followed.WithContext("following server " + server.endpoint);
      failed = true;
    }
    round.push_back(std::move(changes));
  }
  RETURN_IF_ERROR(store_.Apply(round));
  {
    std::lock_guard lock(stats_mutex_);
    ++stats_.rounds;
    if (failed) ++stats_.failures;
    if (!more && !failed) stats_.caught_up = true;
  }
  if (newest_epoch > routing_.epoch) RETURN_IF_ERROR(RefreshRouting());
  if (failed) return first_failure;
  return more;
}

Status ReplicaFeed::RefreshRouting() {
  ASSIGN_OR_RETURN(RoutingTable routing, scheduler_.GetRouting(options_.request_timeout));
  if (routing.epoch <= routing_.epoch) return Status::Ok();
  for (uint32_t p = 0; p < routing.num_partitions; ++p) {
    const bool moved = p >= routing_.owners.size() || routing_.owners[p] != routing.owners[p];
    if (!moved) continue;
    for (const TableSpec& table : store_.tables()) {
      to_start_[{routing.owners[p], table.name}].push_back(p);
    }
  }
  spdlog::info("replica: routing epoch {} -> {}", routing_.epoch, routing.epoch);
  routing_ = std::move(routing);
  std::lock_guard lock(stats_mutex_);
  ++stats_.routing_changes;
  return Status::Ok();
}

void ReplicaFeed::Run(const std::atomic<bool>& stop) {
  bool down = false;
  while (!stop.load(std::memory_order_relaxed)) {
    Result<bool> more = Round();
    if (!more.ok() && !down) {
      spdlog::warn("replica: {}; serving the rows it has and asking again every {} ms",
                   more.status().ToString(), options_.poll_interval.count());
    } else if (more.ok() && down) {
      spdlog::info("replica: the stream is back");
    }
    down = !more.ok();
    if (!more.ok() || !*more) std::this_thread::sleep_for(options_.poll_interval);
  }
}

void ReplicaFeed::Leave() {
  for (const ServerInfo& server : routing_.servers) {
    for (const TableSpec& table : store_.tables()) {
      RpcChannel& channel = ChannelTo(server);
      const uint64_t id = channel.NextRequestId();
      wire::FollowRequest request{.follower = follower_id_, .table = table.name, .start = {},
                                  .max_rows = 0, .leave = true};
      (void)channel.Call(id, wire::EncodeFollow({id, routing_.epoch}, request), Millis(1'000));
    }
  }
}

}  // namespace ember::ps
