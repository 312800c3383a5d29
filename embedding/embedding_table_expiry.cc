// EmbeddingTable, expiry: deleting the rows not updated for the table's TTL, in memory and (through
// the tier) on disk.
#include <cstring>
#include <mutex>
#include <vector>

#include "embedding/embedding_table.h"

namespace ember::embedding {

Result<uint64_t> EmbeddingTable::ExpireRows() {
  if (spec_.ttl_seconds == 0) return uint64_t{0};
  const uint64_t now = new_rows_.NowSeconds();
  auto is_expired = [&](const float* row) {
    uint32_t updated;
    std::memcpy(&updated, row + floats_per_row_ - 1, sizeof(updated));
    return updated + uint64_t{spec_.ttl_seconds} <= now;
  };
  uint64_t total = 0;
  std::vector<uint64_t> victims;
  for (uint32_t p = 0; p < num_partitions(); ++p) {
    std::lock_guard<std::mutex> lock(memory_.LockOf(p));
    RowStore& store = memory_.store(p);
    victims.clear();
    std::as_const(store).ForEach([&](uint64_t key, const float* row) {
      if (is_expired(row)) victims.push_back(key);
    });
    uint64_t disk_only = 0;
    if (tier_ != nullptr) {
      // On disk first; memory is dropped only once that succeeded.
      ASSIGN_OR_RETURN(disk_only, tier_->ExpireOnDiskLocked(p, victims, is_expired));
    }
    for (uint64_t key : victims) {
      store.Erase(key);
      changes_.Note(p, key);
    }
    if (tier_ != nullptr) tier_->ForgetErasedLocked(p, victims.size());
    const uint64_t expired = victims.size() + disk_only;
    row_count_.fetch_sub(expired, std::memory_order_relaxed);
    total += expired;
  }
  counters_.Add(TableStat::kExpired, total);
  return total;
}

}  // namespace ember::embedding
