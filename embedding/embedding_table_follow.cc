// EmbeddingTable, followers: the marks of serving replicas that follow a partition's changes
// (change_tracker.h), the rows they are due, and erasing single rows (what a replica does with
// the deletions it is streamed).
#include <algorithm>
#include <mutex>
#include <vector>

#include "common/check.h"
#include "embedding/embedding_table.h"

namespace ember::embedding {

void EmbeddingTable::Follow(uint32_t partition, uint64_t follower) {
  EMBER_CHECK(partition < num_partitions(), "partition", partition, "of table", spec_.name,
              "out of range");
  std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
  changes_.Follow(partition, follower);
}

void EmbeddingTable::Unfollow(uint32_t partition, uint64_t follower) {
  EMBER_CHECK(partition < num_partitions(), "partition", partition, "of table", spec_.name,
              "out of range");
  std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
  changes_.Unfollow(partition, follower);
}

Result<std::optional<std::vector<uint64_t>>> EmbeddingTable::TakeFollowedKeys(uint32_t partition,
                                                                              uint64_t follower) {
  EMBER_CHECK(partition < num_partitions(), "partition", partition, "of table", spec_.name,
              "out of range");
  std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
  ChangeTracker::FollowerTake take = changes_.TakeFollowed(partition, follower);
  if (!take.following) return std::optional<std::vector<uint64_t>>();
  if (!take.whole) return std::optional<std::vector<uint64_t>>(std::move(take.keys));
  std::vector<uint64_t> every_key;
  Status listed = VisitPartitionLocked(
      partition, [&](uint64_t key, std::span<const float>, std::span<const float>) {
        every_key.push_back(key);
      });
  if (!listed.ok()) {
    changes_.Follow(partition, follower);  // still due every row
    return listed;
  }
  std::sort(every_key.begin(), every_key.end());
  return std::optional<std::vector<uint64_t>>(std::move(every_key));
}

Status EmbeddingTable::VisitKeys(uint32_t partition, std::span<const uint64_t> keys,
                                 const RowVisitor& visit, std::vector<uint64_t>& absent) const {
  EMBER_CHECK(partition < num_partitions(), "partition", partition, "of table", spec_.name,
              "out of range");
  std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
  return VisitKeysLocked(partition, keys, visit, absent);
}

Result<uint64_t> EmbeddingTable::EraseKeys(std::span<const uint64_t> keys) {
  if (tier_ != nullptr) {
    return FailedPrecondition("erasing single rows of table '" + spec_.name +
                              "': not supported with a disk tier");
  }
  uint64_t erased = 0;
  for (uint64_t key : keys) {
    const uint32_t partition = PartitionOf(key);
    std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
    if (!memory_.store(partition).Erase(key)) continue;
    changes_.Note(partition, key);
    ++erased;
  }
  row_count_.fetch_sub(erased, std::memory_order_relaxed);
  return erased;
}

}  // namespace ember::embedding
