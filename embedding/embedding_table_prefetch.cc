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
using internal::kPinOne;
using internal::kReferenced;
using internal::LoadFlags;
using internal::PinCount;
using internal::StoreFlags;

namespace {

// Hints held at once per table: a peer that never releases its hints is bounded by this and by
// their expiry.
constexpr size_t kMaxHints = 4096;
// Keys written to disk a stripe remembers for the prefetches in flight; past it, a new generation
// begins (and prefetches that read the stripe before drop what they read of it).
constexpr size_t kMaxWrittenKeys = 8192;

}  // namespace

bool EmbeddingTable::PinRow(float* row) {
  Tier& tier = *tier_;
  float* flags_word = row + floats_per_row_;
  const uint32_t flags = LoadFlags(flags_word);
  if (PinCount(flags) == 0) {
    const uint64_t row_bytes = uint64_t{stored_floats_} * sizeof(float);
    uint64_t pinned = tier.pinned_bytes.load(std::memory_order_relaxed);
    do {
      if (pinned + row_bytes > tier.options.pin_budget_bytes) return false;
    } while (!tier.pinned_bytes.compare_exchange_weak(pinned, pinned + row_bytes,
                                                      std::memory_order_relaxed));
    tier.pinned_rows.fetch_add(1, std::memory_order_relaxed);
  }
  StoreFlags(flags_word, (flags + kPinOne) | kReferenced);
  return true;
}

void EmbeddingTable::UnpinRow(float* row) {
  float* flags_word = row + floats_per_row_;
  const uint32_t flags = LoadFlags(flags_word);
  if (PinCount(flags) == 0) return;  // erased and created again since it was pinned
  StoreFlags(flags_word, flags - kPinOne);
  if (PinCount(flags) == 1) ForgetPin();
}

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

void EmbeddingTable::ForgetPin() {
  tier_->pinned_bytes.fetch_sub(uint64_t{stored_floats_} * sizeof(float),
                                std::memory_order_relaxed);
  tier_->pinned_rows.fetch_sub(1, std::memory_order_relaxed);
}

Result<size_t> EmbeddingTable::Prefetch(uint64_t hint, std::span<const uint64_t> keys,
                                        std::chrono::steady_clock::time_point expires) {
  if (tier_ == nullptr) return size_t{0};
  Tier& tier = *tier_;
  const auto now = std::chrono::steady_clock::now();
  ReleaseExpiredHints(now);
  ReleaseHint(hint);  // a hint sent again replaces the first
  {
    std::lock_guard<std::mutex> lock(tier.hints_mu);
    if (tier.hints.size() >= kMaxHints) {
      tier.hints_refused.fetch_add(1, std::memory_order_relaxed);
      return ResourceExhausted("table '" + spec_.name + "' holds " +
                               std::to_string(kMaxHints) + " hints already");
    }
  }
  tier.hinted_keys.fetch_add(keys.size(), std::memory_order_relaxed);
  std::vector<uint64_t> unique(keys.begin(), keys.end());
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  internal::RequestGroups& groups =
      internal::GroupByStripe(unique, table_id_, num_partitions_, num_stripes_);

  Tier::Hint held;
  held.expires = expires;
  std::vector<uint32_t> missing;  // positions in `unique` not in memory
  std::vector<uint64_t> generations(num_stripes_, 0), writes_seen(num_stripes_, 0);
  uint64_t refused = 0;
  // First: pin the rows in memory, and note the others.
  for (uint32_t s = 0; s < num_stripes_; ++s) {
    if (groups.bounds[s] == groups.bounds[s + 1]) continue;
    std::lock_guard<std::mutex> lock(stripes_[s].mu);
    generations[s] = stripes_[s].disk_generation;
    writes_seen[s] = stripes_[s].disk_writes;
    for (uint32_t j = groups.bounds[s]; j < groups.bounds[s + 1]; ++j) {
      const uint32_t at = groups.order[j];
      float* row = stores_[groups.partition[at]].Find(unique[at]);
      if (row == nullptr) {
        missing.push_back(at);
      } else if (PinRow(row)) {
        held.pinned.push_back(unique[at]);
      } else {
        ++refused;
      }
    }
  }
  // Then read the others from disk, without any lock, all in one MultiGet; only as many as can
  // still be pinned (a row read but not pinned would likely be evicted before its request came).
  const uint64_t row_bytes = uint64_t{stored_floats_} * sizeof(float);
  const uint64_t pinned_now = tier.pinned_bytes.load(std::memory_order_relaxed);
  const uint64_t room = tier.options.pin_budget_bytes > pinned_now
                            ? (tier.options.pin_budget_bytes - pinned_now) / row_bytes
                            : 0;
  if (missing.size() > room) {
    refused += missing.size() - room;
    missing.resize(room);
  }
  std::vector<uint32_t> partitions(missing.size());
  std::vector<uint64_t> missing_keys(missing.size());
  for (size_t m = 0; m < missing.size(); ++m) {
    partitions[m] = groups.partition[missing[m]];
    missing_keys[m] = unique[missing[m]];
  }
  std::vector<float> loaded(missing.size() * floats_per_row_);
  std::vector<uint8_t> found(missing.size(), 0);
  RETURN_IF_ERROR(tier.options.disk->MultiGet(
      partitions, missing_keys, [&](size_t m, std::span<const float> stored) {
        std::copy(stored.begin(), stored.end(), loaded.data() + m * floats_per_row_);
        found[m] = 1;
      }));
  // Last: insert what was read, stripe by stripe, unless the row was written to disk meanwhile
  // (the read may then be older than the row written back): those are left to the request.
  std::vector<size_t> by_stripe(missing.size());
  for (size_t m = 0; m < missing.size(); ++m) by_stripe[m] = m;
  const uint32_t stripe_mask = num_stripes_ - 1;
  std::stable_sort(by_stripe.begin(), by_stripe.end(), [&](size_t a, size_t b) {
    return (partitions[a] & stripe_mask) < (partitions[b] & stripe_mask);
  });
  const bool create_new = admission_ == nullptr && spec_.ttl_seconds == 0;
  std::vector<uint32_t> touched;
  for (size_t begin = 0; begin < by_stripe.size();) {
    const uint32_t s = partitions[by_stripe[begin]] & stripe_mask;
    size_t end = begin;
    while (end < by_stripe.size() && (partitions[by_stripe[end]] & stripe_mask) == s) ++end;
    std::lock_guard<std::mutex> lock(stripes_[s].mu);
    const bool new_generation = stripes_[s].disk_generation != generations[s];
    touched.clear();
    for (size_t i = begin; i < end; ++i) {
      const size_t m = by_stripe[i];
      // A new key gets the row its request would create, unless creating is an event of its
      // own (admission counts requests, a TTL stamps the time), and only as a pinned row: one
      // evicted before its request came would be written to disk unchanged.
      if (!found[m] && (!create_new || tier.pinned_bytes.load(std::memory_order_relaxed) +
                                               row_bytes > tier.options.pin_budget_bytes)) {
        if (create_new) ++refused;
        continue;
      }
      auto written = stripes_[s].written.find(missing_keys[m]);
      if (new_generation ||
          (written != stripes_[s].written.end() && written->second > writes_seen[s])) {
        tier.prefetch_raced.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      auto [row, is_new] = stores_[partitions[m]].FindOrInsert(missing_keys[m]);
      if (is_new) {
        if (found[m]) {
          std::copy_n(loaded.data() + m * floats_per_row_, floats_per_row_, row);
          StoreFlags(row + floats_per_row_, kOnDisk);
          tier.prefetched.fetch_add(1, std::memory_order_relaxed);
        } else {
          InitNewRow(missing_keys[m], row);
          StoreFlags(row + floats_per_row_, kDirty);
          rows_.fetch_add(1, std::memory_order_relaxed);
          changes_.Note(partitions[m], missing_keys[m]);
          tier.created_ahead.fetch_add(1, std::memory_order_relaxed);
        }
        tier.clocks[partitions[m]].Add(missing_keys[m]);
        tier.resident.fetch_add(1, std::memory_order_relaxed);
        if (tier.options.budget != nullptr) tier.options.budget->Charge(row_bytes);
        touched.push_back(partitions[m]);
      }
      if (PinRow(row)) {
        held.pinned.push_back(missing_keys[m]);
      } else {
        ++refused;
      }
    }
    if (!touched.empty() && tier.options.budget != nullptr && tier.options.budget->exceeded()) {
      std::sort(touched.begin(), touched.end());
      touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
      RETURN_IF_ERROR(EvictWhileOverBudget(touched, 2 * (end - begin)));
    }
    begin = end;
  }
  tier.pins_refused.fetch_add(refused, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(tier.hints_mu);
  tier.hints[hint] = std::move(held);
  return size_t{refused};
}

bool EmbeddingTable::ReleaseHint(uint64_t hint) {
  if (tier_ == nullptr) return false;
  Tier::Hint held;
  {
    std::lock_guard<std::mutex> lock(tier_->hints_mu);
    auto it = tier_->hints.find(hint);
    if (it == tier_->hints.end()) return false;
    held = std::move(it->second);
    tier_->hints.erase(it);
  }
  Unpin(held.pinned);
  return true;
}

size_t EmbeddingTable::ReleaseExpiredHints(std::chrono::steady_clock::time_point now) {
  if (tier_ == nullptr) return 0;
  std::vector<uint64_t> pinned;
  size_t expired = 0;
  {
    std::lock_guard<std::mutex> lock(tier_->hints_mu);
    for (auto it = tier_->hints.begin(); it != tier_->hints.end();) {
      if (it->second.expires > now) {
        ++it;
        continue;
      }
      pinned.insert(pinned.end(), it->second.pinned.begin(), it->second.pinned.end());
      it = tier_->hints.erase(it);
      ++expired;
    }
  }
  tier_->hints_expired.fetch_add(expired, std::memory_order_relaxed);
  Unpin(pinned);
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
        UnpinRow(row);
      }
    }
  }
}

PrefetchStats EmbeddingTable::prefetch_stats() const {
  PrefetchStats stats;
  if (tier_ == nullptr) return stats;
  const Tier& tier = *tier_;
  stats.hinted_keys = tier.hinted_keys.load(std::memory_order_relaxed);
  stats.prefetched_rows = tier.prefetched.load(std::memory_order_relaxed);
  stats.created_rows = tier.created_ahead.load(std::memory_order_relaxed);
  stats.raced_rows = tier.prefetch_raced.load(std::memory_order_relaxed);
  stats.pins_refused = tier.pins_refused.load(std::memory_order_relaxed);
  stats.hints_refused = tier.hints_refused.load(std::memory_order_relaxed);
  stats.hints_expired = tier.hints_expired.load(std::memory_order_relaxed);
  stats.pinned_rows = tier.pinned_rows.load(std::memory_order_relaxed);
  stats.pinned_bytes = tier.pinned_bytes.load(std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(tier.hints_mu);
    stats.hints = tier.hints.size();
  }
  return stats;
}

}  // namespace ember::embedding
