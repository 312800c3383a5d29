// EmbeddingTable, look-ahead: rows of later requests read from disk ahead of them and pinned in
// memory until released (see Prefetch in embedding_table.h).
#include <algorithm>
#include <string>
#include <utility>

#include "embedding/embedding_table.h"
#include "embedding/embedding_table_internal.h"

namespace ember::embedding {

using internal::kDirty;
using internal::kOnDisk;
using internal::StoreFlags;

namespace {

// Keys written to disk a stripe remembers for the prefetches in flight; past it, a new generation
// begins (and prefetches that read the stripe before drop what they read of it).
constexpr size_t kMaxWrittenKeys = 8192;

}  // namespace

void EmbeddingTable::NoteDiskWrite(uint32_t partition) {
  Stripe& stripe = stripes_[partition & (num_stripes_ - 1)];
  ++stripe.disk_generation;
  stripe.written.clear();
}

void EmbeddingTable::NoteRowWritten(uint32_t partition, uint64_t key) {
  Stripe& stripe = stripes_[partition & (num_stripes_ - 1)];
  if (stripe.written.size() >= kMaxWrittenKeys) NoteDiskWrite(partition);
  stripe.written[key] = ++stripe.disk_writes;
}

// One Prefetch's keys and what it found of them, from pass to pass.
struct EmbeddingTable::PrefetchPass {
  std::vector<uint64_t> unique;  // the hint's keys, sorted, each once
  internal::RequestGroups* groups = nullptr;
  std::vector<uint64_t> pinned;  // keys pinned so far
  std::vector<uint32_t> missing;  // positions in `unique` not in memory
  // Per stripe, its disk generation and write count when its missing keys were noted.
  std::vector<uint64_t> generations, writes_seen;
  uint64_t refused = 0;  // keys left unpinned
  // Per missing key read: its partition, key, row read (when found) and whether it was found.
  std::vector<uint32_t> partitions;
  std::vector<uint64_t> missing_keys;
  std::vector<float> loaded;
  std::vector<uint8_t> found;
};

Result<size_t> EmbeddingTable::Prefetch(uint64_t hint, std::span<const uint64_t> keys,
                                        std::chrono::steady_clock::time_point expires) {
  if (tier_ == nullptr) return size_t{0};
  Tier& tier = *tier_;
  ReleaseExpiredHints(std::chrono::steady_clock::now());
  ReleaseHint(hint);  // a hint sent again replaces the first
  RETURN_IF_ERROR(tier.pins->CheckRoomForHint(spec_.name));
  counters_.Add(TableStat::kHintedKeys, keys.size());
  PrefetchPass pass;
  pass.unique.assign(keys.begin(), keys.end());
  std::sort(pass.unique.begin(), pass.unique.end());
  pass.unique.erase(std::unique(pass.unique.begin(), pass.unique.end()), pass.unique.end());
  pass.groups = &internal::GroupByStripe(pass.unique, table_id_, num_partitions_, num_stripes_);
  // First: pin the rows in memory, and note the others; then read those from disk, without any
  // lock; last, insert and pin what was read, stripe by stripe.
  PinResidentRows(pass);
  Status read = ReadMissingRows(pass);
  if (read.ok()) read = InsertPrefetchedRows(pass);
  if (!read.ok()) {
    Unpin(pass.pinned);  // the hint is not held: nothing would release its pins
    return read;
  }
  counters_.Add(TableStat::kPinsRefused, pass.refused);
  tier.pins->Hold(hint, std::move(pass.pinned), expires);
  return size_t{pass.refused};
}

void EmbeddingTable::PinResidentRows(PrefetchPass& pass) {
  const internal::RequestGroups& groups = *pass.groups;
  pass.generations.assign(num_stripes_, 0);
  pass.writes_seen.assign(num_stripes_, 0);
  for (uint32_t s = 0; s < num_stripes_; ++s) {
    if (groups.bounds[s] == groups.bounds[s + 1]) continue;
    std::lock_guard<std::mutex> lock(stripes_[s].mu);
    pass.generations[s] = stripes_[s].disk_generation;
    pass.writes_seen[s] = stripes_[s].disk_writes;
    for (uint32_t j = groups.bounds[s]; j < groups.bounds[s + 1]; ++j) {
      const uint32_t at = groups.order[j];
      float* row = stores_[groups.partition[at]].Find(pass.unique[at]);
      if (row == nullptr) {
        pass.missing.push_back(at);
      } else if (tier_->pins->Pin(row + floats_per_row_)) {
        pass.pinned.push_back(pass.unique[at]);
      } else {
        ++pass.refused;
      }
    }
  }
}

Status EmbeddingTable::ReadMissingRows(PrefetchPass& pass) {
  // All in one MultiGet; only as many as can still be pinned (a row read but not pinned would
  // likely be evicted before its request came).
  Tier& tier = *tier_;
  const uint64_t room = tier.pins->room_rows();
  if (pass.missing.size() > room) {
    pass.refused += pass.missing.size() - room;
    pass.missing.resize(room);
  }
  const size_t n = pass.missing.size();
  pass.partitions.resize(n);
  pass.missing_keys.resize(n);
  for (size_t m = 0; m < n; ++m) {
    pass.partitions[m] = pass.groups->partition[pass.missing[m]];
    pass.missing_keys[m] = pass.unique[pass.missing[m]];
  }
  pass.loaded.resize(n * floats_per_row_);
  pass.found.assign(n, 0);
  return tier.options.disk->MultiGet(
      pass.partitions, pass.missing_keys, [&](size_t m, std::span<const float> stored) {
        std::copy(stored.begin(), stored.end(), pass.loaded.data() + m * floats_per_row_);
        pass.found[m] = 1;
      });
}

Status EmbeddingTable::InsertPrefetchedRows(PrefetchPass& pass) {
  // Unless the row was written to disk meanwhile (the read may then be older than the row written
  // back): those are left to the request.
  std::vector<size_t> by_stripe(pass.missing.size());
  for (size_t m = 0; m < by_stripe.size(); ++m) by_stripe[m] = m;
  const uint32_t stripe_mask = num_stripes_ - 1;
  std::stable_sort(by_stripe.begin(), by_stripe.end(), [&](size_t a, size_t b) {
    return (pass.partitions[a] & stripe_mask) < (pass.partitions[b] & stripe_mask);
  });
  std::vector<uint32_t> touched;
  for (size_t begin = 0; begin < by_stripe.size();) {
    const uint32_t s = pass.partitions[by_stripe[begin]] & stripe_mask;
    size_t end = begin;
    while (end < by_stripe.size() && (pass.partitions[by_stripe[end]] & stripe_mask) == s) ++end;
    std::lock_guard<std::mutex> lock(stripes_[s].mu);
    touched.clear();
    for (size_t i = begin; i < end; ++i) InsertPrefetchedRow(pass, by_stripe[i], s, touched);
    if (!touched.empty() && OverBudget()) {
      std::sort(touched.begin(), touched.end());
      touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
      RETURN_IF_ERROR(EvictWhileOverBudget(touched, 2 * (end - begin)));
    }
    begin = end;
  }
  return Status::Ok();
}

void EmbeddingTable::InsertPrefetchedRow(PrefetchPass& pass, size_t m, uint32_t stripe,
                                         std::vector<uint32_t>& touched) {
  Tier& tier = *tier_;
  const uint64_t row_bytes = uint64_t{stored_floats_} * sizeof(float);
  const bool create_new = admission_ == nullptr && spec_.ttl_seconds == 0;
  const uint32_t partition = pass.partitions[m];
  const uint64_t key = pass.missing_keys[m];
  // A new key gets the row its request would create, unless creating is an event of its own
  // (admission counts requests, a TTL stamps the time), and only as a pinned row: one evicted
  // before its request came would be written to disk unchanged.
  if (!pass.found[m] && (!create_new || tier.pins->room_rows() == 0)) {
    if (create_new) ++pass.refused;
    return;
  }
  const Stripe& state = stripes_[stripe];
  auto written = state.written.find(key);
  if (state.disk_generation != pass.generations[stripe] ||
      (written != state.written.end() && written->second > pass.writes_seen[stripe])) {
    tier.prefetch_raced.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  auto [row, is_new] = stores_[partition].FindOrInsert(key);
  if (is_new) {
    if (pass.found[m]) {
      std::copy_n(pass.loaded.data() + m * floats_per_row_, floats_per_row_, row);
      StoreFlags(row + floats_per_row_, kOnDisk);
      counters_.Add(TableStat::kPrefetchedRows);
    } else {
      InitNewRow(key, row);
      StoreFlags(row + floats_per_row_, kDirty);
      rows_.fetch_add(1, std::memory_order_relaxed);
      changes_.Note(partition, key);
      counters_.Add(TableStat::kCreatedAhead);
    }
    tier.clocks[partition].Add(key);
    tier.resident.fetch_add(1, std::memory_order_relaxed);
    if (tier.options.budget != nullptr) tier.options.budget->Charge(row_bytes);
    touched.push_back(partition);
  }
  if (tier.pins->Pin(row + floats_per_row_)) {
    pass.pinned.push_back(key);
  } else {
    ++pass.refused;
  }
}

bool EmbeddingTable::ReleaseHint(uint64_t hint) {
  if (tier_ == nullptr) return false;
  std::optional<std::vector<uint64_t>> pinned = tier_->pins->Release(hint);
  if (!pinned) return false;
  Unpin(*pinned);
  return true;
}

size_t EmbeddingTable::ReleaseExpiredHints(std::chrono::steady_clock::time_point now) {
  if (tier_ == nullptr) return 0;
  size_t expired = 0;
  Unpin(tier_->pins->ReleaseExpired(now, &expired));
  return expired;
}

void EmbeddingTable::Unpin(std::span<const uint64_t> keys) {
  if (keys.empty()) return;
  internal::RequestGroups& groups =
      internal::GroupByStripe(keys, table_id_, num_partitions_, num_stripes_);
  for (uint32_t s = 0; s < num_stripes_; ++s) {
    if (groups.bounds[s] == groups.bounds[s + 1]) continue;
    std::lock_guard<std::mutex> lock(stripes_[s].mu);
    for (uint32_t j = groups.bounds[s]; j < groups.bounds[s + 1]; ++j) {
      const uint32_t at = groups.order[j];
      // A row erased since it was pinned (its partition moved away, or it expired) is gone.
      if (float* row = stores_[groups.partition[at]].Find(keys[at]); row != nullptr) {
        tier_->pins->Unpin(row + floats_per_row_);
      }
    }
  }
}

PrefetchStats EmbeddingTable::prefetch_stats() const {
  PrefetchStats stats;
  if (tier_ == nullptr) return stats;
  const Tier& tier = *tier_;
  stats.hinted_keys = counters_.Get(TableStat::kHintedKeys);
  stats.prefetched_rows = counters_.Get(TableStat::kPrefetchedRows);
  stats.created_rows = counters_.Get(TableStat::kCreatedAhead);
  stats.raced_rows = tier.prefetch_raced.load(std::memory_order_relaxed);
  stats.pins_refused = counters_.Get(TableStat::kPinsRefused);
  stats.hints_refused = tier.pins->hints_refused();
  stats.hints_expired = tier.pins->hints_expired();
  stats.pinned_rows = counters_.Get(TableStat::kPinnedRows);
  stats.pinned_bytes = counters_.Get(TableStat::kPinnedBytes);
  stats.hints = tier.pins->hints_held();
  return stats;
}

}  // namespace ember::embedding
