// EmbeddingTable, expiry: deleting the rows not updated for the table's TTL, in memory and on disk.
#include <cstring>
#include <vector>

#include "embedding/embedding_table.h"
#include "embedding/embedding_table_internal.h"

namespace ember::embedding {

Result<uint64_t> EmbeddingTable::ExpireRows() {
  if (spec_.ttl_seconds == 0) return uint64_t{0};
  const uint64_t now = NowSeconds();
  auto is_expired = [&](const float* row) {
    uint32_t updated;
    std::memcpy(&updated, row + floats_per_row_ - 1, sizeof(updated));
    return updated + uint64_t{spec_.ttl_seconds} <= now;
  };
  uint64_t total = 0;
  std::vector<uint64_t> victims;
  for (uint32_t p = 0; p < num_partitions_; ++p) {
    std::lock_guard<std::mutex> lock(StripeLock(p));
    RowStore& store = stores_[p];
    victims.clear();
    std::as_const(store).ForEach([&](uint64_t key, const float* row) {
      if (is_expired(row)) victims.push_back(key);
    });
    uint64_t disk_only = 0;
    if (tier_ != nullptr) {
      // Delete on disk first; memory is dropped only once that succeeded.
      RowWrites deletes(*tier_->options.disk);
      for (uint64_t key : victims) {
        if (internal::LoadFlags(store.Find(key) + floats_per_row_) & internal::kOnDisk) {
          deletes.Delete(p, key);
        }
      }
      RETURN_IF_ERROR(tier_->options.disk->ForEachInPartition(
          p, [&](uint64_t key, std::span<const float> stored) {
            if (store.Find(key) == nullptr && is_expired(stored.data())) {
              deletes.Delete(p, key);
              changes_.Note(p, key);
              ++disk_only;
            }
          }));
      uint64_t durable_expired = disk_only;
      for (uint64_t key : victims) {
        if (internal::LoadFlags(store.Find(key) + floats_per_row_) & internal::kOnDisk) {
          ++durable_expired;
        }
      }
      if (durable_expired > 0) {
        AddCountRecord(deletes, p, tier_->durable_rows[p] - durable_expired);
      }
      if (PushLog* log = tier_->options.disk->push_log(); log != nullptr && !deletes.empty()) {
        // Logged too, so that a replay of the log does not bring the rows back.
        RETURN_IF_ERROR(log->WaitDurable(deletes.AppendToLog(*log))
                            .WithContext("logging expired rows"));
      }
      if (!deletes.empty()) NoteDiskWrite(p);
      RETURN_IF_ERROR(tier_->options.disk->Write(deletes).WithContext("deleting expired rows"));
      tier_->durable_rows[p] -= durable_expired;
      for (uint64_t key : victims) {
        if (internal::PinCount(internal::LoadFlags(store.Find(key) + floats_per_row_)) > 0) {
          tier_->pins->ForgetPinnedRow();
        }
      }
      if (tier_->options.budget != nullptr) {
        tier_->options.budget->Release(uint64_t{victims.size()} * stored_floats_ * sizeof(float));
      }
      tier_->resident.fetch_sub(victims.size(), std::memory_order_relaxed);
    }
    for (uint64_t key : victims) {
      store.Erase(key);
      changes_.Note(p, key);
    }
    if (tier_ != nullptr && !victims.empty()) {
      ClockRing& ring = tier_->clocks[p];
      ring.Clear();
      std::as_const(store).ForEach([&](uint64_t key, const float*) { ring.Add(key); });
    }
    const uint64_t expired = victims.size() + disk_only;
    rows_.fetch_sub(expired, std::memory_order_relaxed);
    total += expired;
  }
  counters_.Add(TableStat::kExpired, total);
  return total;
}

}  // namespace ember::embedding
