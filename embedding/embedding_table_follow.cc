// EmbeddingTable, followers: the marks of serving replicas that follow a partition's changes
// (change_tracker.h), the rows they are due, and what a replica does with what it is streamed:
// writing rows in batches and erasing single rows.
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

Status EmbeddingTable::RestoreRows(std::span<const uint64_t> keys, std::span<const float> rows) {
  const uint32_t dim = spec_.dim;
  if (rows.size() != keys.size() * dim || optimizer_.state_floats() != 0) {
    return InvalidArgument("restoring " + std::to_string(keys.size()) + " rows of " +
                           std::to_string(rows.size()) + " floats into table '" + spec_.name +
                           "' (dim " + std::to_string(dim) + ", " +
                           std::to_string(optimizer_.state_floats()) +
                           " floats of optimizer state): want rows of weights only");
  }
  if (tier_ != nullptr) {
    for (size_t i = 0; i < keys.size(); ++i) {
      RETURN_IF_ERROR(Restore(keys[i], rows.subspan(i * dim, dim), {}));
    }
    return Status::Ok();
  }
  // A stream's rows are mostly cold here: one lock per stripe, and each key's index entry
  // prefetched 2 * kPrefetchDistance keys ahead of its write (as a push does).
  RequestGroups& groups = GroupByStripe(keys, table_id_, memory_);
  const std::span<const RowStore> stores = memory_.stores();
  uint64_t inserted_rows = 0;
  for (uint32_t s = 0; s < memory_.num_stripes(); ++s) {
    if (groups.empty(s)) continue;
    std::lock_guard<std::mutex> lock(memory_.StripeMutex(s));
    for (uint32_t j = groups.begin(s); j < groups.end(s); ++j) {
      groups.PrefetchEntriesBelow(j + 2 * kPrefetchDistance + 1, keys, stores);
      const uint32_t at = groups.order[j];
      const uint32_t partition = groups.partition[at];
      auto [stored, inserted] = memory_.store(partition).FindOrInsert(keys[at]);
      inserted_rows += inserted ? 1 : 0;
      changes_.Note(partition, keys[at]);
      std::copy_n(rows.data() + size_t{at} * dim, dim, stored);
      new_rows_.StampUpdate(stored);
    }
  }
  row_count_.fetch_add(inserted_rows, std::memory_order_relaxed);
  return Status::Ok();
}

}  // namespace ember::embedding
