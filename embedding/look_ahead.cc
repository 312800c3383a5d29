// LookAhead: rows of later requests read from disk ahead of them and pinned in memory until
// released.
#include "embedding/look_ahead.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>

#include "embedding/tier_row_flags.h"

namespace ember::embedding {

struct LookAhead::Pass {
  std::vector<uint64_t> unique;  // the hint's keys, sorted, each once
  RequestGroups* groups = nullptr;
  std::vector<uint64_t> pinned;   // keys pinned so far
  std::vector<uint32_t> missing;  // positions in `unique` not in memory
  // Per stripe, its disk generation and write count when its missing keys were noted.
  std::vector<uint64_t> generations, writes_seen;
  uint64_t refused = 0;  // keys left unpinned
  // Per missing key read: its partition, key, row read (when found) and whether it was found.
  std::vector<uint32_t> partitions;
  std::vector<uint64_t> missing_keys;
  std::vector<float> loaded;
  std::vector<uint32_t> found;  // the flags the row read carries into memory; 0: not found
};

Result<size_t> LookAhead::Prefetch(uint64_t hint, std::span<const uint64_t> keys,
                                   std::chrono::steady_clock::time_point expires) {
  HintPins& pins = tier_.pins();
  ReleaseExpiredHints(std::chrono::steady_clock::now());
  ReleaseHint(hint);  // a hint sent again replaces the first
  RETURN_IF_ERROR(pins.CheckRoomForHint(table_.name));
  table_.counters.Add(TableStat::kHintedKeys, keys.size());
  // Rows written to disk from here on are noted, so that what this pass reads before they are
  // written is not inserted after them.
  struct NotedPass {
    explicit NotedPass(DiskTier& tier) : tier(tier) { tier.BeginNotedPass(); }
    ~NotedPass() { tier.EndNotedPass(); }
    DiskTier& tier;
  } noted(tier_);
  Pass pass;
  pass.unique.assign(keys.begin(), keys.end());
  std::sort(pass.unique.begin(), pass.unique.end());
  pass.unique.erase(std::unique(pass.unique.begin(), pass.unique.end()), pass.unique.end());
  pass.groups = &GroupByStripe(pass.unique, table_.table_id, table_.rows);
  // First: pin the rows in memory, and note the others; then read those from disk, without any
  // lock; last, insert and pin what was read, stripe by stripe.
  PinResidentRows(pass);
  Status read = ReadMissingRows(pass);
  if (read.ok()) read = InsertReadRows(pass);
  if (!read.ok()) {
    Unpin(pass.pinned);  // the hint is not held: nothing would release its pins
    return read;
  }
  table_.counters.Add(TableStat::kPinsRefused, pass.refused);
  pins.Hold(hint, std::move(pass.pinned), expires);
  return size_t{pass.refused};
}

void LookAhead::PinResidentRows(Pass& pass) {
  const RequestGroups& groups = *pass.groups;
  const uint32_t num_stripes = table_.rows.num_stripes();
  pass.generations.assign(num_stripes, 0);
  pass.writes_seen.assign(num_stripes, 0);
  for (uint32_t s = 0; s < num_stripes; ++s) {
    if (groups.empty(s)) continue;
    std::lock_guard<std::mutex> lock(table_.rows.StripeMutex(s));
    pass.generations[s] = tier_.write_notes(s).generation;
    pass.writes_seen[s] = tier_.write_notes(s).writes;
    for (uint32_t j = groups.begin(s); j < groups.end(s); ++j) {
      const uint32_t at = groups.order[j];
      float* row = table_.rows.store(groups.partition[at]).Find(pass.unique[at]);
      if (row == nullptr) {
        pass.missing.push_back(at);
      } else if (tier_.pins().Pin(row + table_.floats_per_row)) {
        pass.pinned.push_back(pass.unique[at]);
      } else {
        ++pass.refused;
      }
    }
  }
}

Status LookAhead::ReadMissingRows(Pass& pass) {
  // All in one MultiGet; only as many as can still be pinned (a row read but not pinned would
  // likely be evicted before its request came).
  const uint64_t room = tier_.pins().room_rows();
  if (pass.missing.size() > room) {
    pass.refused += pass.missing.size() - room;
    pass.missing.resize(room);
  }
  const size_t n = pass.missing.size();
  const uint32_t floats_per_row = table_.floats_per_row;
  pass.partitions.resize(n);
  pass.missing_keys.resize(n);
  for (size_t m = 0; m < n; ++m) {
    pass.partitions[m] = pass.groups->partition[pass.missing[m]];
    pass.missing_keys[m] = pass.unique[pass.missing[m]];
  }
  pass.loaded.resize(n * floats_per_row);
  pass.found.assign(n, 0);
  return tier_.ReadRowsForMemory(pass.partitions, pass.missing_keys,
                                 [&](size_t m, std::span<const float> stored, uint32_t flags) {
                                   std::copy(stored.begin(), stored.end(),
                                             pass.loaded.data() + m * floats_per_row);
                                   pass.found[m] = flags;  // kOnDisk at least
                                 });
}

Status LookAhead::InsertReadRows(Pass& pass) {
  // Unless the row was written to disk meanwhile (the read may then be older than the row written
  // back): those are left to the request.
  std::vector<size_t> by_stripe(pass.missing.size());
  for (size_t m = 0; m < by_stripe.size(); ++m) by_stripe[m] = m;
  const StripedRows& rows = table_.rows;
  std::stable_sort(by_stripe.begin(), by_stripe.end(), [&](size_t a, size_t b) {
    return rows.StripeOf(pass.partitions[a]) < rows.StripeOf(pass.partitions[b]);
  });
  std::vector<uint32_t> touched;
  for (size_t begin = 0; begin < by_stripe.size();) {
    const uint32_t s = rows.StripeOf(pass.partitions[by_stripe[begin]]);
    size_t end = begin;
    while (end < by_stripe.size() && rows.StripeOf(pass.partitions[by_stripe[end]]) == s) ++end;
    std::lock_guard<std::mutex> lock(rows.StripeMutex(s));
    touched.clear();
    for (size_t i = begin; i < end; ++i) InsertRowLocked(pass, by_stripe[i], s, touched);
    if (!touched.empty() && tier_.OverBudget()) {
      std::sort(touched.begin(), touched.end());
      touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
      RETURN_IF_ERROR(tier_.EvictWhileOverBudget(touched, 2 * (end - begin)));
    }
    begin = end;
  }
  return Status::Ok();
}

void LookAhead::InsertRowLocked(Pass& pass, size_t m, uint32_t stripe,
                                std::vector<uint32_t>& touched) {
  HintPins& pins = tier_.pins();
  const bool create_new = !table_.new_rows.admits_by_count() && !table_.new_rows.stamps_time();
  const uint32_t partition = pass.partitions[m];
  const uint64_t key = pass.missing_keys[m];
  // A new key gets the row its request would create, unless creating is an event of its own
  // (admission counts requests, a TTL stamps the time), and only as a pinned row: one evicted
  // before its request came would be written to disk unchanged.
  if (!pass.found[m] && (!create_new || pins.room_rows() == 0)) {
    if (create_new) ++pass.refused;
    return;
  }
  const DiskTier::WriteNotes& notes = tier_.write_notes(stripe);
  auto written = notes.written.find(key);
  if (notes.generation != pass.generations[stripe] ||
      (written != notes.written.end() && written->second > pass.writes_seen[stripe])) {
    raced_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint32_t floats_per_row = table_.floats_per_row;
  auto [row, is_new] = table_.rows.store(partition).FindOrInsert(key);
  if (is_new) {
    if (pass.found[m]) {
      std::copy_n(pass.loaded.data() + m * floats_per_row, floats_per_row, row);
      StoreFlags(row + floats_per_row, pass.found[m]);
      table_.counters.Add(TableStat::kPrefetchedRows);
    } else {
      table_.new_rows.Init(key, row);
      StoreFlags(row + floats_per_row, kDirty);
      table_.row_count.fetch_add(1, std::memory_order_relaxed);
      table_.changes.Note(partition, key);
      table_.counters.Add(TableStat::kCreatedAhead);
    }
    tier_.AddResidentLocked(partition, key, row);
    touched.push_back(partition);
  }
  if (pins.Pin(row + floats_per_row)) {
    pass.pinned.push_back(key);
  } else {
    ++pass.refused;
  }
}

bool LookAhead::ReleaseHint(uint64_t hint) {
  std::optional<std::vector<uint64_t>> pinned = tier_.pins().Release(hint);
  if (!pinned) return false;
  Unpin(*pinned);
  return true;
}

size_t LookAhead::ReleaseExpiredHints(std::chrono::steady_clock::time_point now) {
  size_t expired = 0;
  Unpin(tier_.pins().ReleaseExpired(now, &expired));
  return expired;
}

void LookAhead::Unpin(std::span<const uint64_t> keys) {
  if (keys.empty()) return;
  RequestGroups& groups = GroupByStripe(keys, table_.table_id, table_.rows);
  for (uint32_t s = 0; s < table_.rows.num_stripes(); ++s) {
    if (groups.empty(s)) continue;
    std::lock_guard<std::mutex> lock(table_.rows.StripeMutex(s));
    for (uint32_t j = groups.begin(s); j < groups.end(s); ++j) {
      const uint32_t at = groups.order[j];
      // A row erased since it was pinned (its partition moved away, or it expired) is gone.
      if (float* row = table_.rows.store(groups.partition[at]).Find(keys[at]); row != nullptr) {
        tier_.pins().Unpin(row + table_.floats_per_row);
      }
    }
  }
}

PrefetchStats LookAhead::stats() const {
  const TableStatCounters& counters = table_.counters;
  const HintPins& pins = tier_.pins();
  PrefetchStats stats;
  stats.hinted_keys = counters.Get(TableStat::kHintedKeys);
  stats.prefetched_rows = counters.Get(TableStat::kPrefetchedRows);
  stats.created_rows = counters.Get(TableStat::kCreatedAhead);
  stats.raced_rows = raced_.load(std::memory_order_relaxed);
  stats.pins_refused = counters.Get(TableStat::kPinsRefused);
  stats.hints_refused = pins.hints_refused();
  stats.hints_expired = pins.hints_expired();
  stats.pinned_rows = counters.Get(TableStat::kPinnedRows);
  stats.pinned_bytes = counters.Get(TableStat::kPinnedBytes);
  stats.hints = pins.hints_held();
  return stats;
}

}  // namespace ember::embedding
