// LookAhead: a tiered table's rows of later requests, read from disk into memory ahead of them and
// pinned until released. Prefetch(hint, keys) holds no lock during the reads, and pins the rows
// (with those already in memory) until ReleaseHint(hint) or the hint expires: eviction never drops
// a pinned row. Pinned rows are bounded by TierOptions::pin_budget_bytes (keys beyond it are not
// pinned, and counted). Prefetching changes no value: a row is loaded only when it is on disk, a
// new key gets the row its request would create (unless the table admits keys by count or stamps
// rows with a TTL: then creating is the request's), and neither happens for a key whose row was
// written to disk while it was read (the read might be older than that row).
//
// Thread-safety: every method may be called from many threads at once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "embedding/disk_tier.h"

namespace ember::embedding {

// Counters of look-ahead (all zero for an in-memory table).
struct PrefetchStats {
  uint64_t hinted_keys = 0;      // keys named by hints
  uint64_t prefetched_rows = 0;  // rows read from disk by Prefetch
  uint64_t created_rows = 0;     // new rows Prefetch created ahead of their request
  uint64_t raced_rows = 0;       // rows read but not kept (their stripe wrote to disk meanwhile)
  uint64_t pins_refused = 0;     // keys not pinned for the pin budget
  uint64_t hints_refused = 0;    // hints refused for too many held
  uint64_t hints_expired = 0;
  uint64_t hints = 0;         // held now
  uint64_t pinned_rows = 0;   // now
  uint64_t pinned_bytes = 0;  // now
};

class LookAhead {
 public:
  // Look-ahead over `tier` (borrowed, outlives this).
  explicit LookAhead(DiskTier& tier) : tier_(tier), table_(tier.table()) {}

  // Reads the rows of `keys` that are on disk into memory and pins them, with those already in
  // memory, under `hint` (replacing an earlier hint of that id) until ReleaseHint(hint) or
  // `expires`; returns how many of the keys were left unpinned (and unread) for the pin budget.
  // ResourceExhausted when too many hints are held; errors of the disk are returned.
  Result<size_t> Prefetch(uint64_t hint, std::span<const uint64_t> keys,
                          std::chrono::steady_clock::time_point expires);
  // Unpins the rows of `hint`; false (and nothing done) when it is not held.
  bool ReleaseHint(uint64_t hint);
  // Releases the hints expired at `now`; returns how many.
  size_t ReleaseExpiredHints(std::chrono::steady_clock::time_point now);
  PrefetchStats stats() const;

 private:
  // One Prefetch's keys and what it found of them, from pass to pass.
  struct Pass;
  // Prefetch's passes: pin the rows in memory and note the others; read those from disk in one
  // MultiGet, as many as can be pinned, holding no lock; insert and pin what was read, stripe by
  // stripe (one row: InsertRowLocked), unless its stripe wrote it to disk meanwhile.
  void PinResidentRows(Pass& pass);
  Status ReadMissingRows(Pass& pass);
  Status InsertReadRows(Pass& pass);
  void InsertRowLocked(Pass& pass, size_t m, uint32_t stripe, std::vector<uint32_t>& touched);
  // Unpins the rows of `keys` still in memory, stripe by stripe.
  void Unpin(std::span<const uint64_t> keys);

  DiskTier& tier_;
  const TierTable& table_;
  std::atomic<uint64_t> raced_{0};  // rows read ahead but not kept (see Prefetch)
};

}  // namespace ember::embedding
