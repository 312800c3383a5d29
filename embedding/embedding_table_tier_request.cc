// EmbeddingTable, tiered: one request's rows (see embedding_table.h). Stripe by stripe under its
// lock: the rows in memory, then the misses from disk (one MultiGet) or new, then each row used;
// a push's rows go to the push log with every stripe still locked; then room is made by eviction.
#include <algorithm>
#include <mutex>
#include <vector>

#include "embedding/embedding_table.h"
#include "embedding/embedding_table_internal.h"
#include "embedding/initializer.h"

namespace ember::embedding {

using internal::kDirty;
using internal::kOnDisk;
using internal::kEvictionsPerInsert;
using internal::kLogged;
using internal::kPrefetchDistance;
using internal::kReferenced;
using internal::LoadFlags;
using internal::PrefetchRow;
using internal::StoreFlags;
using internal::WithLogSegment;

void EmbeddingTable::LookUpStripeLocked(uint32_t stripe, std::span<const uint64_t> keys,
                                        internal::RequestGroups& groups, bool push,
                                        std::vector<uint32_t>& missed) {
  // A pull reads the weights; a push also the state. Both mark the flags word after them.
  const size_t used_floats = push ? floats_per_row_ : spec_.dim;
  const auto look_up = [&](uint32_t j) {
    const uint32_t at = groups.order[j];
    float* row = stores_[groups.partition[at]].Find(keys[at]);
    groups.rows[j] = row;
    if (row == nullptr) return;
    PrefetchRow(row, used_floats);
    PrefetchRow(row + floats_per_row_, 1);
  };
  // Pipelined as the in-memory path is: a key's index entry is prefetched 2 * kPrefetchDistance
  // keys ahead (across stripes), its row looked up and prefetched kPrefetchDistance keys ahead,
  // then the row is marked referenced.
  const uint32_t begin = groups.bounds[stripe];
  const uint32_t end = groups.bounds[stripe + 1];
  missed.clear();
  groups.PrefetchEntriesBelow(begin + 2 * kPrefetchDistance, keys, stores_);
  for (uint32_t j = begin; j < std::min(end, begin + kPrefetchDistance); ++j) look_up(j);
  for (uint32_t j = begin; j < end; ++j) {
    groups.PrefetchEntriesBelow(j + 2 * kPrefetchDistance + 1, keys, stores_);
    if (j + kPrefetchDistance < end) look_up(j + kPrefetchDistance);
    float* row = groups.rows[j];
    if (row == nullptr) {
      missed.push_back(j);
      continue;
    }
    float* flags = row + floats_per_row_;
    StoreFlags(flags, LoadFlags(flags) | kReferenced);
  }
  counters_.Add(TableStat::kHits, end - begin - missed.size());
  counters_.Add(TableStat::kMisses, missed.size());
}

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

void EmbeddingTable::UseStripeRowsLocked(uint32_t stripe, std::span<const uint64_t> keys,
                                         internal::RequestGroups& groups, const RowUse& use,
                                         const float* position_data, bool push,
                                         PushLogging* logging) {
  thread_local std::vector<uint32_t> counted;  // partitions whose count of rows on disk went up
  const uint32_t begin = groups.bounds[stripe];
  const uint32_t end = groups.bounds[stripe + 1];
  // The rows are in cache by now, but a push's gradients may not be: the log record it builds
  // (larger than a core's cache for a large push) pushes them out.
  const auto prefetch_position_data = [&](uint32_t j) {
    PrefetchRow(position_data + size_t{groups.order[j]} * spec_.dim, spec_.dim);
  };
  for (uint32_t j = begin; j < std::min(end, begin + kPrefetchDistance); ++j) {
    prefetch_position_data(j);
  }
  counted.clear();
  for (uint32_t j = begin; j < end; ++j) {
    if (j + kPrefetchDistance < end) prefetch_position_data(j + kPrefetchDistance);
    float* row = groups.rows[j];
    use(groups.order[j], row);
    if (!push || groups.IsScratch(row)) continue;
    const uint32_t at = groups.order[j];
    changes_.Note(groups.partition[at], keys[at]);
    const uint32_t changed = LoadFlags(row + floats_per_row_) | kDirty;
    // With the log, the row notes the segment its record goes to (or an earlier one).
    StoreFlags(row + floats_per_row_,
               logging != nullptr ? WithLogSegment(changed, logging->segment) : changed);
    if (logging == nullptr) continue;
    logging->writes.Put(groups.partition[at], keys[at],
                        std::span<const float>(row, floats_per_row_));
    if (MarkDurable(groups.partition[at], row)) counted.push_back(groups.partition[at]);
  }
  // One count record per partition whose count went up (the stripe lock is still held).
  std::sort(counted.begin(), counted.end());
  counted.erase(std::unique(counted.begin(), counted.end()), counted.end());
  for (uint32_t partition : counted) {
    AddCountRecord(logging->writes, partition, tier_->durable_rows[partition]);
  }
}

Status EmbeddingTable::EvictForStripeLocked(uint32_t stripe,
                                            const internal::RequestGroups& groups,
                                            size_t inserted) {
  if (!OverBudget()) return Status::Ok();
  thread_local std::vector<uint32_t> touched;  // partitions of the stripe
  touched.clear();
  for (uint32_t j = groups.bounds[stripe]; j < groups.bounds[stripe + 1]; ++j) {
    touched.push_back(groups.partition[groups.order[j]]);
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  return EvictWhileOverBudget(touched, std::max<size_t>(1, inserted) * kEvictionsPerInsert);
}

void EmbeddingTable::ForgetLogSegments(std::span<const uint32_t> stripes,
                                       const internal::RequestGroups& groups) {
  for (uint32_t stripe : stripes) {
    for (uint32_t j = groups.bounds[stripe]; j < groups.bounds[stripe + 1]; ++j) {
      float* row = groups.rows[j];
      if (groups.IsScratch(row)) continue;
      StoreFlags(row + floats_per_row_, LoadFlags(row + floats_per_row_) & ~kLogged);
    }
  }
}

Status EmbeddingTable::ForEachTieredRequestRow(std::span<const uint64_t> keys,
                                               internal::RequestGroups& groups, const RowUse& use,
                                               const float* position_data,
                                               PushCheck* push_check) {
  const bool push = push_check != nullptr;
  PushLog* const push_log = tier_->options.disk->push_log();
  const bool log = push && push_log != nullptr;
  thread_local std::vector<uint32_t> missed;  // indexes into groups.order
  // With a push log the locks of all stripes touched are held until the push is appended to it.
  std::vector<std::unique_lock<std::mutex>> held;
  std::vector<uint32_t> held_stripes;
  std::vector<size_t> inserted_per_stripe;
  PushLogging logging{RowWrites(*tier_->options.disk), 0};
  if (log) {
    // Before any stripe lock: retiring the log's full segments takes them.
    RETURN_IF_ERROR(push_log->WaitForRoom().WithContext("logging a push"));
    logging.writes.ReserveRows(keys.size());
    // Read before the record is appended: it goes to this segment or a later one.
    logging.segment = push_log->active_segment();
  }
  for (uint32_t s = 0; s < num_stripes_; ++s) {
    if (groups.bounds[s] == groups.bounds[s + 1]) continue;
    std::unique_lock<std::mutex> lock(stripes_[s].mu);
    LookUpStripeLocked(s, keys, groups, push, missed);
    Result<size_t> inserted =
        missed.empty() ? size_t{0} : LoadMissesLocked(keys, groups, missed, push);
    if (!inserted.ok()) {
      // The rows of the stripes before changed in memory and will not be logged: they no
      // longer say where their last change is, so that relogging catches them.
      ForgetLogSegments(held_stripes, groups);
      return inserted.status();
    }
    UseStripeRowsLocked(s, keys, groups, use, position_data, push, log ? &logging : nullptr);
    if (log) {
      held.push_back(std::move(lock));
      held_stripes.push_back(s);
      inserted_per_stripe.push_back(*inserted);
    } else {
      RETURN_IF_ERROR(EvictForStripeLocked(s, groups, *inserted));
    }
  }
  if (!log) return Status::Ok();
  push_check->AppendWrites(logging.writes);
  // Every stripe of the request is still locked: the rows logged are the rows in memory, and the
  // log orders the pushes of a key as memory does. The rows stay changed: they reach RocksDB when
  // evicted or when the log retires the segment.
  const PushLog::Ticket ticket = logging.writes.MoveToLog(*push_log);
  held.clear();
  // Acknowledged only once written (with the pushes that came meanwhile: group commit).
  RETURN_IF_ERROR(push_log->WaitDurable(ticket).WithContext("logging a push"));
  // Then room is made, one stripe lock at a time (a write-back waits for the log: see
  // WaitForLoggedPushes), so that no other request waits on this one's evictions. Within the
  // budget no stripe is locked again: the next pushes hold them, all at once, meanwhile.
  for (size_t h = 0; h < held_stripes.size(); ++h) {
    if (!OverBudget()) break;
    std::lock_guard<std::mutex> lock(stripes_[held_stripes[h]].mu);
    RETURN_IF_ERROR(EvictForStripeLocked(held_stripes[h], groups, inserted_per_stripe[h]));
  }
  return Status::Ok();
}

}  // namespace ember::embedding
