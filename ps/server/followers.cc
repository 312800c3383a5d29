// Followers: the streams of changed rows to serving replicas (followers.h).
#include "ps/server/followers.h"

#include <algorithm>

#include "common/quote_for_error.h"

namespace ember::ps {

size_t Followers::streams() const {
  std::lock_guard lock(mutex_);
  return streams_.size();
}

void Followers::Unfollow(uint64_t follower, Stream& stream) {
  for (const auto& [partition, keys] : stream.due) stream.table->Unfollow(partition, follower);
}

void Followers::ForgetIdle(Clock::time_point now) {
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (now - it->second.last_asked < idle_timeout_) {
      ++it;
      continue;
    }
    Unfollow(it->first.first, it->second);
    it = streams_.erase(it);
  }
}

Result<FollowBatch> Followers::Follow(
    const wire::FollowRequest& request, embedding::EmbeddingTable& table,
    const std::function<FollowedPartition(uint32_t)>& partition_state, LimitCounters& limits_hit,
    Clock::time_point now) {
  const std::string what = "follower " + std::to_string(request.follower) + " of table " +
                           QuoteForError(request.table);
  for (uint32_t partition : request.start) {
    if (partition >= table.num_partitions()) {
      return InvalidArgument(what + ": partition " + std::to_string(partition) + " of " +
                             std::to_string(table.num_partitions()) + " does not exist");
    }
  }
  std::lock_guard lock(mutex_);
  ForgetIdle(now);
  const StreamId id{request.follower, request.table};
  auto found = streams_.find(id);
  if (request.leave) {
    if (found != streams_.end()) {
      Unfollow(id.first, found->second);
      streams_.erase(found);
    }
    return FollowBatch{};
  }
  if (found == streams_.end()) {
    if (request.start.empty()) {
      return FailedPrecondition(what + " is not known here (forgotten, or this server restarted):"
                                       " start its partitions again");
    }
    if (streams_.size() >= max_streams_) {
      limits_hit.Count(Limit::kFollowers);
      return LimitExceeded(Limit::kFollowers, max_streams_, "a new stream for " + what);
    }
    found = streams_.emplace(id, Stream{.table = &table}).first;
  }
  Stream& stream = found->second;
  stream.last_asked = now;
  FollowBatch batch;
  for (uint32_t partition : request.start) {
    if (partition_state(partition) == FollowedPartition::kGone) {
      batch.lost.push_back(partition);
      continue;
    }
    table.Follow(partition, id.first);
    stream.due[partition].clear();
  }
  const uint32_t dim = std::max<uint32_t>(table.dim(), 1);
  const uint64_t fit = std::max<uint64_t>(1, kMaxReplyBytes / (sizeof(float) * dim + 8));
  const uint32_t asked = request.max_rows == 0 ? kDefaultMaxRows : request.max_rows;
  const auto budget = static_cast<uint32_t>(std::min<uint64_t>(asked, fit));
  RETURN_IF_ERROR(Gather(stream, id.first, budget, partition_state, batch));
  RETURN_IF_ERROR(ReadRows(table, batch));
  for (const auto& [partition, keys] : stream.due) batch.following.push_back(partition);
  return batch;
}

Status Followers::Gather(Stream& stream, uint64_t follower, uint32_t budget,
                         const std::function<FollowedPartition(uint32_t)>& partition_state,
                         FollowBatch& batch) {
  // Round robin from where the last request stopped, so that a busy partition starves no other.
  std::vector<uint32_t> order;
  for (const auto& [partition, keys] : stream.due) order.push_back(partition);
  std::rotate(order.begin(),
              std::lower_bound(order.begin(), order.end(), stream.next), order.end());
  for (uint32_t partition : order) {
    const FollowedPartition state = partition_state(partition);
    if (state == FollowedPartition::kGone) {
      stream.table->Unfollow(partition, follower);
      stream.due.erase(partition);
      batch.lost.push_back(partition);
      continue;
    }
    if (state == FollowedPartition::kHeld) continue;  // handed over: decided later
    const uint64_t sent = batch.keys.size() + batch.deleted.size();
    if (sent >= budget) {
      batch.more = true;
      stream.next = partition;
      return Status::Ok();
    }
    std::vector<uint64_t>& due = stream.due[partition];
    if (due.empty()) {
      ASSIGN_OR_RETURN(auto taken, stream.table->TakeFollowedKeys(partition, follower));
      if (!taken.has_value()) {  // erased here since: gone
        stream.due.erase(partition);
        batch.lost.push_back(partition);
        continue;
      }
      due = std::move(*taken);
    }
    MoveDueKeys(due, static_cast<uint32_t>(budget - sent), batch);
    if (!due.empty()) {
      batch.more = true;
      stream.next = partition;
      return Status::Ok();
    }
  }
  stream.next = 0;
  return Status::Ok();
}

void Followers::MoveDueKeys(std::vector<uint64_t>& keys, uint32_t budget, FollowBatch& batch) {
  const auto count = static_cast<std::ptrdiff_t>(std::min<size_t>(keys.size(), budget));
  batch.keys.insert(batch.keys.end(), keys.begin(), keys.begin() + count);
  keys.erase(keys.begin(), keys.begin() + count);
}

Status Followers::ReadRows(const embedding::EmbeddingTable& table, FollowBatch& batch) {
  const size_t dim = table.dim();
  std::vector<uint8_t> found(batch.keys.size());
  batch.rows.resize(batch.keys.size() * dim);
  RETURN_IF_ERROR(table.Lookup(batch.keys, batch.rows, MissingRows::kFlag, found));
  size_t kept = 0;
  for (size_t i = 0; i < batch.keys.size(); ++i) {
    if (!found[i]) {
      batch.deleted.push_back(batch.keys[i]);
      continue;
    }
    if (kept != i) {
      batch.keys[kept] = batch.keys[i];
      std::copy_n(batch.rows.begin() + static_cast<std::ptrdiff_t>(i * dim), dim,
                  batch.rows.begin() + static_cast<std::ptrdiff_t>(kept * dim));
    }
    ++kept;
  }
  batch.keys.resize(kept);
  batch.rows.resize(kept * dim);
  return Status::Ok();
}

}  // namespace ember::ps
