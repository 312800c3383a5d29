// DiskTier: its cold row file. Reading rows from it before RocksDB, keeping rows in it (unchanged
// ones after a write to RocksDB, changed ones instead of one), and the changed rows' walks: for a
// checkpoint, a write-back and the push log's relogging.
#include <algorithm>
#include <vector>

#include "embedding/disk_tier.h"
#include "embedding/tier_row_flags.h"

namespace ember::embedding {
namespace {

// What a changed row of the file carries back into memory of the flags it was stored with.
constexpr uint32_t kKeptFlags = kDirty | kOnDisk | kLogged | kLogSegmentBits;

// Sorts `keys` and drops repeats.
void SortUnique(std::vector<uint64_t>& keys) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
}

}  // namespace

Status DiskTier::ReadStoredRows(std::span<const uint32_t> partitions,
                                std::span<const uint64_t> keys, const StoredRowFound& found,
                                bool keep) const {
  const uint32_t floats_per_row = table_.floats_per_row;
  if (cold_ == nullptr) {
    return disk_.MultiGet(partitions, keys, [&](size_t i, std::span<const float> stored) {
      found(i, stored, kOnDisk);
    });
  }
  thread_local std::vector<float> row;                 // a row and its flags word
  thread_local std::vector<uint32_t> rest_partitions;  // the keys the file does not hold
  thread_local std::vector<uint64_t> rest_keys;
  thread_local std::vector<size_t> rest_at;  // their indexes into `keys`
  row.resize(floats_per_row + 1);
  rest_partitions.clear();
  rest_keys.clear();
  rest_at.clear();
  cold_->FindEach(
      partitions, keys,
      [&](size_t i, const float* stored, bool changed) {
        const uint32_t flags = changed ? LoadFlags(stored + floats_per_row) & kKeptFlags : kOnDisk;
        found(i, std::span<const float>(stored, floats_per_row), flags);
      },
      [&](size_t i) {
        rest_partitions.push_back(partitions[i]);
        rest_keys.push_back(keys[i]);
        rest_at.push_back(i);
      });
  cold_hits_.fetch_add(keys.size() - rest_keys.size(), std::memory_order_relaxed);
  if (rest_keys.empty()) return Status::Ok();
  return disk_.MultiGet(rest_partitions, rest_keys, [&](size_t r, std::span<const float> stored) {
    if (keep) {
      std::copy(stored.begin(), stored.end(), row.begin());
      StoreFlags(&row[floats_per_row], kOnDisk);
      cold_->Store(rest_partitions[r], rest_keys[r], row, /*changed=*/false);
    }
    found(rest_at[r], stored, kOnDisk);
  });
}

namespace {

// The rows (the tier's ColdRows) to store in the cold row file.
template <typename ColdRows>
std::span<const ColdRowFile::RowToStore> RowsToStore(const ColdRows& rows) {
  thread_local std::vector<ColdRowFile::RowToStore> to_store;
  to_store.clear();
  for (const auto& row : rows) to_store.push_back({row.partition, row.key, row.row});
  return to_store;
}

}  // namespace

void DiskTier::KeepCold(std::span<const ColdRow> rows) const {
  if (cold_ == nullptr) return;
  cold_->StoreEach(RowsToStore(rows), /*changed=*/false, nullptr);
}

void DiskTier::KeepChangedColdLocked(std::span<const ColdRow> rows,
                                     const std::function<void(size_t i)>& refused) {
  if (cold_ == nullptr) {
    for (size_t i = 0; i < rows.size(); ++i) refused(i);
    return;
  }
  thread_local std::vector<bool> stored;
  stored.assign(rows.size(), true);
  cold_->StoreEach(RowsToStore(rows), /*changed=*/true, [&](size_t i) { stored[i] = false; });
  size_t kept = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!stored[i]) {
      refused(i);
      continue;
    }
    ++kept;
    const uint32_t partition = rows[i].partition;
    ChangedColdKeys& changed = changed_cold_[partition];
    changed.keys.push_back(rows[i].key);
    if (changed.keys.size() >= 2 * changed.pruned_size + 64) {
      // Pruned of repeats and of rows no longer changed in the file, so that the list stays
      // within a few times the changed rows.
      SortUnique(changed.keys);
      std::erase_if(changed.keys, [&](uint64_t k) { return !cold_->HoldsChanged(partition, k); });
      changed.pruned_size = changed.keys.size();
    }
  }
  kept_changed_.fetch_add(kept, std::memory_order_relaxed);
}

void DiskTier::ForEachChangedColdRowLocked(
    uint32_t partition,
    const std::function<void(uint64_t key, std::span<const float> row_and_flags)>& visit) const {
  if (cold_ == nullptr || changed_cold_[partition].keys.empty()) return;
  std::vector<uint64_t> keys = changed_cold_[partition].keys;
  SortUnique(keys);
  const RowStore& store = table_.rows.store(partition);
  std::vector<float> row(table_.floats_per_row + 1);
  for (uint64_t key : keys) {
    // A row in memory is newer than the file's.
    if (store.Find(key) != nullptr) continue;
    bool changed = false;
    if (cold_->Find(partition, key, row.data(), &changed) && changed) visit(key, row);
  }
}

Status DiskTier::WriteBackChangedColdRowsLocked(uint32_t partition) {
  if (cold_ == nullptr || changed_cold_[partition].keys.empty()) return Status::Ok();
  const uint32_t floats_per_row = table_.floats_per_row;
  RowWrites writes(disk_);
  std::vector<uint64_t> keys;
  ForEachChangedColdRowLocked(partition, [&](uint64_t key, std::span<const float> row) {
    writes.Put(partition, key, row.first(floats_per_row));
    keys.push_back(key);
  });
  if (!keys.empty()) {
    RETURN_IF_ERROR(WaitForLoggedPushes(keys.size()));
    RETURN_IF_ERROR(disk_.Write(writes).WithContext("writing back rows of the cold row file"));
    // Under the stripe lock, no one changed them meanwhile: the file's rows are RocksDB's now.
    for (uint64_t key : keys) cold_->MarkUnchanged(partition, key);
    writebacks_.fetch_add(keys.size(), std::memory_order_relaxed);
    table_.counters.Add(TableStat::kWritebackBytes,
                        keys.size() * uint64_t{floats_per_row} * sizeof(float));
  }
  changed_cold_[partition] = ChangedColdKeys{};
  return Status::Ok();
}

void DiskTier::RelogChangedColdRowsLocked(uint32_t partition, uint64_t through, uint64_t segment,
                                          RowWrites& writes) {
  const uint32_t floats_per_row = table_.floats_per_row;
  std::vector<float> relogged(floats_per_row + 1);
  ForEachChangedColdRowLocked(partition, [&](uint64_t key, std::span<const float> row) {
    const uint32_t flags = LoadFlags(&row[floats_per_row]);
    // Rows changed since a later segment began are logged there already.
    if (!LoggedAtMost(flags, through)) return;
    writes.Put(partition, key, row.first(floats_per_row));
    std::copy(row.begin(), row.end(), relogged.begin());
    StoreFlags(&relogged[floats_per_row], WithLogSegment(flags, segment));
    cold_->Store(partition, key, relogged, /*changed=*/true);  // its own slot: always stored
  });
}

bool DiskTier::AnyChangedColdRow() const {
  if (cold_ == nullptr) return false;
  for (uint32_t p = 0; p < changed_cold_.size(); ++p) {
    for (uint64_t key : changed_cold_[p].keys) {
      if (cold_->HoldsChanged(p, key)) return true;
    }
  }
  return false;
}

}  // namespace ember::embedding
