// EmbeddingTable, tiered: the keys of a request that are not in memory, read from disk under
// their stripe's lock (one MultiGet per stripe) and put in memory, or created (see
// embedding_table.h).
#include <algorithm>
#include <vector>

#include "embedding/embedding_table.h"
#include "embedding/embedding_table_internal.h"
#include "embedding/initializer.h"

namespace ember::embedding {

using internal::kDirty;
using internal::kOnDisk;
using internal::kReferenced;
using internal::StoreFlags;

Result<size_t> EmbeddingTable::LoadMissesLocked(std::span<const uint64_t> keys,
                                                internal::RequestGroups& groups,
                                                std::span<const uint32_t> missed, bool push) {
  Tier& tier = *tier_;
  thread_local std::vector<const float*> stored;  // by miss: its row on disk, or null
  thread_local std::vector<uint32_t> partitions;
  thread_local std::vector<uint64_t> missed_keys;
  thread_local std::vector<float> loaded;
  // Every miss of the stripe in one MultiGet.
  stored.assign(missed.size(), nullptr);
  partitions.resize(missed.size());
  missed_keys.resize(missed.size());
  for (size_t m = 0; m < missed.size(); ++m) {
    const uint32_t at = groups.order[missed[m]];
    partitions[m] = groups.partition[at];
    missed_keys[m] = keys[at];
  }
  loaded.resize(missed.size() * floats_per_row_);
  RETURN_IF_ERROR(tier.options.disk->MultiGet(
      partitions, missed_keys, [&](size_t m, std::span<const float> row) {
        std::copy(row.begin(), row.end(), loaded.data() + m * floats_per_row_);
        stored[m] = loaded.data() + m * floats_per_row_;
      }));
  const uint64_t row_bytes = uint64_t{stored_floats_} * sizeof(float);
  size_t inserted = 0;
  for (size_t m = 0; m < missed.size(); ++m) {
    const uint32_t partition = partitions[m];
    const uint64_t key = missed_keys[m];
    if (stored[m] == nullptr && admission_ != nullptr && stores_[partition].Find(key) == nullptr &&
        !Admit(key)) {
      groups.rows[missed[m]] = InitialRowNotStored(key, push, groups.NextScratchRow());
      continue;
    }
    auto [row, is_new] = stores_[partition].FindOrInsert(key);
    groups.rows[missed[m]] = row;
    if (!is_new) continue;  // a duplicate key of this request, inserted just before
    ++inserted;
    uint32_t flags = kReferenced;
    if (stored[m] != nullptr) {
      std::copy_n(stored[m], floats_per_row_, row);
      flags |= kOnDisk;
      tier.loaded.fetch_add(1, std::memory_order_relaxed);
    } else {
      InitNewRow(key, row);
      flags |= kDirty;
      rows_.fetch_add(1, std::memory_order_relaxed);
      changes_.Note(partition, key);
    }
    StoreFlags(row + floats_per_row_, flags);
    tier.clocks[partition].Add(key);
    tier.resident.fetch_add(1, std::memory_order_relaxed);
    if (tier.options.budget != nullptr) tier.options.budget->Charge(row_bytes);
  }
  return inserted;
}

}  // namespace ember::embedding
