// DiskTier: one request's rows. Stripe by stripe under its lock: the rows in memory, then the
// misses from disk (one MultiGet) or new, then each row used; a push's rows go to the push log
// with every stripe still locked; then room is made by one eviction over the request's stripes.
#include <algorithm>
#include <bit>
#include <mutex>
#include <vector>

#include "embedding/disk_tier.h"
#include "embedding/tier_row_flags.h"

namespace ember::embedding {

void DiskTier::LookUpStripeLocked(uint32_t stripe, std::span<const uint64_t> keys,
                                  RequestGroups& groups, bool push, std::vector<uint32_t>& missed) {
  const uint32_t floats_per_row = table_.floats_per_row;
  const std::span<const RowStore> stores = table_.rows.stores();
  // A pull reads the weights; a push also the state. Both mark the flags word after them.
  const size_t used_floats = push ? floats_per_row : table_.dim;
  const auto look_up = [&](uint32_t j) {
    const uint32_t at = groups.order[j];
    float* row = table_.rows.store(groups.partition[at]).Find(keys[at]);
    groups.rows[j] = row;
    if (row == nullptr) return;
    PrefetchRow(row, used_floats);
    PrefetchRow(row + floats_per_row, 1);
  };
  // Pipelined as the in-memory path is: a key's index entry is prefetched 2 * kPrefetchDistance
  // keys ahead (across stripes), its row looked up and prefetched kPrefetchDistance keys ahead,
  // then the row is marked referenced.
  const uint32_t begin = groups.begin(stripe);
  const uint32_t end = groups.end(stripe);
  missed.clear();
  groups.PrefetchEntriesBelow(begin + 2 * kPrefetchDistance, keys, stores);
  for (uint32_t j = begin; j < std::min(end, begin + kPrefetchDistance); ++j) look_up(j);
  for (uint32_t j = begin; j < end; ++j) {
    groups.PrefetchEntriesBelow(j + 2 * kPrefetchDistance + 1, keys, stores);
    if (j + kPrefetchDistance < end) look_up(j + kPrefetchDistance);
    float* row = groups.rows[j];
    if (row == nullptr) {
      missed.push_back(j);
      continue;
    }
    float* flags = row + floats_per_row;
    StoreFlags(flags, LoadFlags(flags) | kReferenced);
  }
  table_.counters.Add(TableStat::kHits, end - begin - missed.size());
  table_.counters.Add(TableStat::kMisses, missed.size());
}

Result<size_t> DiskTier::LoadMissesLocked(std::span<const uint64_t> keys, RequestGroups& groups,
                                          std::span<const uint32_t> missed, bool push) {
  const uint32_t floats_per_row = table_.floats_per_row;
  thread_local std::vector<const float*> stored;  // by miss: its row on disk, or null
  thread_local std::vector<uint32_t> stored_flags;  // by miss: the flags its row carries
  thread_local std::vector<uint32_t> partitions;
  thread_local std::vector<uint64_t> missed_keys;
  thread_local std::vector<float> loaded;
  // Every miss of the stripe: from the cold row file, the rest in one MultiGet.
  stored.assign(missed.size(), nullptr);
  stored_flags.resize(missed.size());
  partitions.resize(missed.size());
  missed_keys.resize(missed.size());
  for (size_t m = 0; m < missed.size(); ++m) {
    const uint32_t at = groups.order[missed[m]];
    partitions[m] = groups.partition[at];
    missed_keys[m] = keys[at];
  }
  loaded.resize(missed.size() * floats_per_row);
  RETURN_IF_ERROR(ReadStoredRows(
      partitions, missed_keys,
      [&](size_t m, std::span<const float> row, uint32_t flags) {
        std::copy(row.begin(), row.end(), loaded.data() + m * floats_per_row);
        stored[m] = loaded.data() + m * floats_per_row;
        stored_flags[m] = flags;
      },
      /*keep=*/true));
  NewRows& new_rows = table_.new_rows;
  size_t inserted = 0;
  for (size_t m = 0; m < missed.size(); ++m) {
    const uint32_t partition = partitions[m];
    const uint64_t key = missed_keys[m];
    RowStore& store = table_.rows.store(partition);
    if (stored[m] == nullptr && new_rows.admits_by_count() && store.Find(key) == nullptr &&
        !new_rows.Admit(key)) {
      groups.rows[missed[m]] = new_rows.NotAdmitted(key, push, groups.NextScratchRow());
      continue;
    }
    auto [row, is_new] = store.FindOrInsert(key);
    groups.rows[missed[m]] = row;
    if (!is_new) continue;  // a duplicate key of this request, inserted just before
    ++inserted;
    uint32_t flags = kReferenced;
    if (stored[m] != nullptr) {
      std::copy_n(stored[m], floats_per_row, row);
      flags |= stored_flags[m];
      loaded_.fetch_add(1, std::memory_order_relaxed);
    } else {
      new_rows.Init(key, row);
      flags |= kDirty;
      table_.row_count.fetch_add(1, std::memory_order_relaxed);
      table_.changes.Note(partition, key);
    }
    StoreFlags(row + floats_per_row, flags);
    AddResidentLocked(partition, key, row);
  }
  return inserted;
}

void DiskTier::UseStripeRowsLocked(uint32_t stripe, std::span<const uint64_t> keys,
                                   RequestGroups& groups, const RowUse& use,
                                   const float* position_data, bool push, PushLogging* logging) {
  const uint32_t floats_per_row = table_.floats_per_row;
  thread_local std::vector<uint32_t> counted;  // partitions whose count of rows on disk went up
  const uint32_t begin = groups.begin(stripe);
  const uint32_t end = groups.end(stripe);
  // The rows are in cache by now, but a push's gradients may not be: the log record it builds
  // (larger than a core's cache for a large push) pushes them out.
  const auto prefetch_position_data = [&](uint32_t j) {
    if (position_data == nullptr) return;
    PrefetchRow(position_data + size_t{groups.order[j]} * table_.dim, table_.dim);
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
    table_.changes.Note(groups.partition[at], keys[at]);
    const uint32_t changed = LoadFlags(row + floats_per_row) | kDirty;
    // With the log, the row notes the segment its record goes to (or an earlier one).
    StoreFlags(row + floats_per_row,
               logging != nullptr ? WithLogSegment(changed, logging->segment) : changed);
    if (logging == nullptr) continue;
    logging->writes.Put(groups.partition[at], keys[at],
                        std::span<const float>(row, floats_per_row));
    if (MarkDurable(groups.partition[at], row)) counted.push_back(groups.partition[at]);
  }
  // One count record per partition whose count went up (the stripe lock is still held).
  std::sort(counted.begin(), counted.end());
  counted.erase(std::unique(counted.begin(), counted.end()), counted.end());
  for (uint32_t partition : counted) {
    AddCountRecord(logging->writes, partition, durable_rows_[partition]);
  }
}

void DiskTier::ForgetLogSegments(std::span<const uint32_t> stripes, const RequestGroups& groups) {
  for (uint32_t stripe : stripes) {
    for (uint32_t j = groups.begin(stripe); j < groups.end(stripe); ++j) {
      float* row = groups.rows[j];
      if (groups.IsScratch(row)) continue;
      float* flags = row + table_.floats_per_row;
      StoreFlags(flags, LoadFlags(flags) & ~kLogged);
    }
  }
}

Status DiskTier::ForEachRequestRow(std::span<const uint64_t> keys, RequestGroups& groups,
                                   const RowUse& use, const float* position_data,
                                   PushCheck* push_check) {
  const bool push = push_check != nullptr;
  PushLog* const push_log = disk_.push_log();
  const bool log = push && push_log != nullptr;
  thread_local std::vector<uint32_t> missed;  // indexes into groups.order
  thread_local std::vector<uint32_t> used_stripes;
  // With a push log the locks of all stripes touched are held until the push is appended to it.
  std::vector<std::unique_lock<std::mutex>> held;
  size_t inserted_rows = 0;
  PushLogging logging{RowWrites(disk_), 0};
  if (log) {
    // Before any stripe lock: retiring the log's full segments takes them.
    RETURN_IF_ERROR(push_log->WaitForRoom().WithContext("logging a push"));
    logging.writes.ReserveRows(keys.size());
    // Read before the record is appended: it goes to this segment or a later one.
    logging.segment = push_log->active_segment();
  }
  used_stripes.clear();
  for (uint32_t s = 0; s < table_.rows.num_stripes(); ++s) {
    if (groups.empty(s)) continue;
    std::unique_lock<std::mutex> lock(table_.rows.StripeMutex(s));
    LookUpStripeLocked(s, keys, groups, push, missed);
    Result<size_t> inserted =
        missed.empty() ? size_t{0} : LoadMissesLocked(keys, groups, missed, push);
    if (!inserted.ok()) {
      // The rows of the stripes before changed in memory and will not be logged: they no
      // longer say where their last change is, so that relogging catches them.
      if (log) ForgetLogSegments(used_stripes, groups);
      return inserted.status();
    }
    UseStripeRowsLocked(s, keys, groups, use, position_data, push, log ? &logging : nullptr);
    used_stripes.push_back(s);
    inserted_rows += *inserted;
    if (log) held.push_back(std::move(lock));
  }
  if (log) {
    push_check->AppendWrites(logging.writes);
    // Every stripe of the request is still locked: the rows logged are the rows in memory, and
    // the log orders the pushes of a key as memory does. The rows stay changed: they reach
    // RocksDB when evicted or when the log retires the segment.
    const PushLog::Ticket ticket = logging.writes.MoveToLog(*push_log);
    held.clear();
    // Acknowledged only once written (with the pushes that came meanwhile: group commit).
    RETURN_IF_ERROR(push_log->WaitDurable(ticket).WithContext("logging a push"));
  }
  return EvictForRequest(used_stripes, groups, inserted_rows);
}

Status DiskTier::EvictForRequest(std::span<const uint32_t> stripes, const RequestGroups& groups,
                                 size_t inserted) {
  if (!OverBudget()) return Status::Ok();
  // The request's partitions, ascending and each once: marked in a bitmap over the table's
  // partitions, then read back word by word (no sort of the request's keys' partitions).
  thread_local std::vector<uint64_t> marked;
  thread_local std::vector<uint32_t> touched;
  marked.assign((table_.rows.num_partitions() + 63) / 64, 0);
  for (uint32_t stripe : stripes) {
    for (uint32_t j = groups.begin(stripe); j < groups.end(stripe); ++j) {
      const uint32_t partition = groups.partition[groups.order[j]];
      marked[partition / 64] |= uint64_t{1} << (partition % 64);
    }
  }
  touched.clear();
  for (size_t word = 0; word < marked.size(); ++word) {
    for (uint64_t bits = marked[word]; bits != 0; bits &= bits - 1) {
      touched.push_back(static_cast<uint32_t>(word * 64 + std::countr_zero(bits)));
    }
  }
  // Every stripe of the request at once, in ascending order as the request took them: one wait
  // for the push log and one RocksDB write for all its victims, not one per stripe.
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(stripes.size());
  for (uint32_t stripe : stripes) locks.emplace_back(table_.rows.StripeMutex(stripe));
  return EvictWhileOverBudget(touched, std::max<size_t>(1, inserted) * kEvictionsPerInsert);
}

}  // namespace ember::embedding
