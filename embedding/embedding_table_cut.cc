// EmbeddingTable, checkpoint cuts: the rows of a partition a full or incremental cut writes; and
// the keys changed in a partition moving out of the server.
#include <algorithm>
#include <mutex>

#include "common/check.h"
#include "embedding/embedding_table.h"

namespace ember::embedding {

uint64_t EmbeddingTable::PartitionRowsLocked(uint32_t partition) const {
  if (tier_ != nullptr) return tier_->PartitionRowsLocked(partition);
  return memory_.store(partition).size();
}

Status EmbeddingTable::VisitPartitionLocked(uint32_t partition, const RowVisitor& visit) const {
  const uint32_t dim = spec_.dim;
  const uint32_t state_floats = optimizer_.state_floats();
  memory_.store(partition).ForEach([&](uint64_t key, const float* row) {
    visit(key, std::span<const float>(row, dim), std::span<const float>(row + dim, state_floats));
  });
  if (tier_ == nullptr) return Status::Ok();
  // Then the rows only on disk (a resident row is newer than its disk version).
  return tier_->ForEachRowOnlyOnDiskLocked(
      partition, [&](uint64_t key, std::span<const float> stored) {
        visit(key, stored.first(dim), stored.subspan(dim, state_floats));
      });
}

Status EmbeddingTable::VisitKeysLocked(uint32_t partition, std::span<const uint64_t> keys,
                                       const RowVisitor& visit,
                                       std::vector<uint64_t>& absent) const {
  const uint32_t dim = spec_.dim;
  const uint32_t state_floats = optimizer_.state_floats();
  std::vector<uint64_t> not_resident;
  for (uint64_t key : keys) {
    if (const float* row = memory_.store(partition).Find(key); row != nullptr) {
      visit(key, std::span<const float>(row, dim), std::span<const float>(row + dim, state_floats));
    } else {
      not_resident.push_back(key);
    }
  }
  if (tier_ == nullptr || not_resident.empty()) {
    absent.insert(absent.end(), not_resident.begin(), not_resident.end());
    return Status::Ok();
  }
  const std::vector<uint32_t> partitions(not_resident.size(), partition);
  std::vector<uint8_t> found(not_resident.size(), 0);
  RETURN_IF_ERROR(tier_->ReadRows(
      partitions, not_resident, [&](size_t i, std::span<const float> stored) {
        found[i] = 1;
        visit(not_resident[i], stored.first(dim), stored.subspan(dim, state_floats));
      }));
  for (size_t i = 0; i < not_resident.size(); ++i) {
    if (!found[i]) absent.push_back(not_resident[i]);
  }
  return Status::Ok();
}

Result<PartitionCut> EmbeddingTable::CutPartition(uint32_t partition, uint64_t previous,
                                                  uint64_t cut, bool track,
                                                  const RowVisitor& visit) {
  EMBER_CHECK(partition < num_partitions(), "partition", partition, "of table", spec_.name,
              "out of range");
  EMBER_CHECK(cut != 0, "a checkpoint cut of table", spec_.name, "needs a nonzero id");
  std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
  std::optional<std::vector<uint64_t>> changed = changes_.Cut(partition, previous, cut, track);
  PartitionCut result;
  Status visited;
  if (changed.has_value()) {
    result.whole = false;
    visited = VisitKeysLocked(partition, *changed, visit, result.deleted);
  } else {
    visited = VisitPartitionLocked(partition, visit);
  }
  if (!visited.ok()) {
    // The cut fails; its changes must still reach the next one.
    changes_.Forget(partition);
    return visited;
  }
  return result;
}

void EmbeddingTable::TrackChangesFrom(uint32_t partition, uint64_t cut) {
  EMBER_CHECK(partition < num_partitions(), "partition", partition, "of table", spec_.name,
              "out of range");
  std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
  changes_.Reset(partition, cut);
}

void EmbeddingTable::BeginMoveChanges(uint32_t partition) {
  std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
  changes_.BeginMove(partition);
}

std::vector<uint64_t> EmbeddingTable::MoveChanges(uint32_t partition) const {
  std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
  return changes_.MoveChanges(partition);
}

void EmbeddingTable::EndMoveChanges(uint32_t partition) {
  std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
  changes_.EndMove(partition);
}

uint64_t EmbeddingTable::tracked_change_keys() const {
  uint64_t total = 0;
  for (uint32_t p = 0; p < num_partitions(); ++p) {
    std::lock_guard<std::mutex> lock(memory_.LockOf(p));
    total += changes_.keys_held(p);
  }
  return total;
}

}  // namespace ember::embedding
