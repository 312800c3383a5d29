// EmbeddingTable: one table's rows on one parameter server, with pull (read, creating missing
// rows) and push (apply gradients through the table's optimizer).
//
// Rows are spread over the table's virtual partitions, each with its own RowStore (so a partition
// can be copied out or dropped on its own). Partitions are guarded by lock stripes (partition p by
// stripe p % stripes): there is no table-wide lock, and a request's keys are grouped by stripe so
// that each stripe's lock is taken once per request and the index entries and rows of its keys are
// prefetched well ahead of use, which is what bounds a lookup on a table far larger than the
// caches. A missing row is created on first touch (pull or push) from the table's deterministic
// initializer, so its value does not depend on which server or partition layout creates it. Each
// row is stored as dim weights followed by the optimizer's state.
//
// Optionally (Create with a TierOptions::disk) the table is tiered: only rows that fit the memory
// budget stay in memory and the others live in RocksDB, with every method, rows() and the
// ForEach* visitors seeing exactly what an all-in-memory table would hold (disk_tier.h). When the
// store keeps a push log, Push returns once the log write holding its rows returned. A caller may
// add records of its own to that write (Push's `also_log`, or its PushCheck), which then reach
// disk atomically with the rows: the server records there which request a push was.
//
// A request hashes each key to its partition once. A caller that must vet the keys first (a
// server: does it own their partitions?) hands the table a check (RequestCheck for a pull,
// PushCheck for a push), which the table runs with those partitions before any row is read or
// changed.
//
// With spec.admit_after > 1, a key without a row gets one only once it occurred in admit_after
// requests (admission_filter.h); until then a pull reads its initial row and a push is dropped.
//
// With spec.ttl_seconds > 0, each row also stores the time it was last updated (one float word
// after its state, on disk too), and ExpireRows() deletes the rows not updated for that long.
//
// Look-ahead (look_ahead.h): Prefetch(hint, keys) reads the rows of keys a later request will use
// from disk into memory and pins them until ReleaseHint(hint) or the hint expires.
//
// Incremental checkpoints (embedding_table_cut.cc): the table notes which keys of each partition
// changed since the checkpoint cuts that wrote it (change_tracker.h), and CutPartition hands a cut
// only those rows and the keys deleted since, under one hold of the partition's stripe lock. The
// same tracker notes the keys changed in a partition since it began moving out of the server.
//
// Lookup (embedding_table_lookup.cc) is the read-only counterpart of Pull, for serving: it copies
// the rows a pull would return and changes nothing (no row created or admitted, no row loaded into
// memory, no CLOCK reference bit, no tier counter, no optimizer state).
//
// Thread-safety: every method may be called from many threads at once. Duplicate keys in one push
// are applied in the order they appear. Callbacks of the ForEach* methods run under a stripe lock
// and must not call back into the table.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/missing_rows.h"
#include "common/status.h"
#include "common/table_spec.h"
#include "common/table_stats.h"
#include "embedding/change_tracker.h"
#include "embedding/disk_tier.h"
#include "embedding/look_ahead.h"
#include "embedding/new_rows.h"
#include "embedding/optimizer.h"
#include "embedding/push_check.h"
#include "embedding/rocks_store.h"
#include "embedding/striped_rows.h"

namespace ember::embedding {

// What CutPartition handed a checkpoint cut.
struct PartitionCut {
  bool whole = true;              // every row of the partition; else the rows changed since
  std::vector<uint64_t> deleted;  // !whole: keys whose rows were deleted since (ascending)
};

class EmbeddingTable {
 public:
  using RowVisitor = std::function<void(uint64_t key, std::span<const float> row,
                                        std::span<const float> state)>;
  // Adds records to the batch that logs a push's rows (RowWrites::PutRecord), before it is
  // written. Runs under the request's stripe locks: it must not call back into the table.
  using PushLogHook = std::function<void(RowWrites& batch)>;
  // Looks at a request's keys with the partition of each (partitions[i] of keys[i]) before any
  // row is read or changed; an error it returns ends the request with that error, nothing done.
  // Lets a caller vet the keys (a server: does it own them?) without hashing them again.
  using RequestCheck = std::function<Status(std::span<const uint64_t> keys,
                                            std::span<const uint32_t> partitions)>;
  // A push's counterpart of RequestCheck, with the records to log with its rows (as PushLogHook).
  // Both run on the thread that called Push.
  using PushCheck = embedding::PushCheck;

  // `spec` must pass ValidateTableSpec and num_partitions must be at least 1 (checked: a
  // violation aborts; validate specs from configs and peers first).
  EmbeddingTable(const TableSpec& spec, uint32_t num_partitions);
  // A table over `tier` (see TierOptions), with the rows already on tier.disk counted. Same
  // preconditions as the constructor; errors of the disk are returned.
  static Result<std::unique_ptr<EmbeddingTable>> Create(const TableSpec& spec,
                                                        uint32_t num_partitions,
                                                        const TierOptions& tier);
  ~EmbeddingTable();
  EmbeddingTable(const EmbeddingTable&) = delete;
  EmbeddingTable& operator=(const EmbeddingTable&) = delete;

  const TableSpec& spec() const { return spec_; }
  uint32_t dim() const { return spec_.dim; }
  uint32_t num_partitions() const { return memory_.num_partitions(); }
  // Optimizer state floats stored per row.
  uint32_t state_floats() const { return optimizer_.state_floats(); }
  // The partition of `key`: ember::PartitionOf(HashName(spec().name), key, num_partitions()).
  uint32_t PartitionOf(uint64_t key) const;

  // Copies the rows of `keys` into `out` (keys.size() * dim floats, row after row), creating
  // missing rows. InvalidArgument when out has the wrong size; `check` (if set) may refuse the
  // request first.
  Status Pull(std::span<const uint64_t> keys, std::span<float> out,
              const RequestCheck& check = nullptr);
  // Copies the rows of `keys` into `out` (keys.size() * dim floats, row after row) without
  // changing anything; a key without a row gets its initial row (MissingRows::kInitial, the row a
  // pull would create) or zeros (kFlag). `found`, keys.size() bytes or empty, gets 1 for each key
  // with a row and 0 for each without. Rows of a tiered table that are not in memory are read from
  // disk and not kept. InvalidArgument for wrong sizes; `check` (if set) may refuse the request
  // first; errors of the disk are returned.
  Status Lookup(std::span<const uint64_t> keys, std::span<float> out, MissingRows missing,
                std::span<uint8_t> found, const RequestCheck& check = nullptr) const;
  // Applies grads (keys.size() * dim floats, row after row) through the optimizer, creating
  // missing rows first. InvalidArgument when grads has the wrong size; nothing is applied then.
  // When logs_pushes(), `also_log` (if set) is called once with the batch of the push's rows
  // and its records are written with them; otherwise it is not called. `learning_rate` > 0
  // takes the place of the optimizer's (a trainer's schedule); 0 keeps the table's.
  Status Push(std::span<const uint64_t> keys, std::span<const float> grads,
              const PushLogHook& also_log = nullptr, float learning_rate = 0);
  // The same, with `check` deciding on the push first (after the size check) and adding the
  // records to log with its rows.
  Status Push(std::span<const uint64_t> keys, std::span<const float> grads, PushCheck& check,
              float learning_rate = 0);
  // Whether Push logs its rows before returning (a tier whose store keeps a push log).
  bool logs_pushes() const;

  // Reads the rows of `keys` that are on disk into memory and pins them, with those already in
  // memory, under `hint` (replacing an earlier hint of that id) until ReleaseHint(hint) or
  // `expires`; returns how many of the keys were left unpinned (and unread) for the pin budget.
  // A no-op for an in-memory table; ResourceExhausted when the table holds too many hints; errors
  // of the disk are returned. Hints are advisory: nothing else depends on them.
  Result<size_t> Prefetch(uint64_t hint, std::span<const uint64_t> keys,
                          std::chrono::steady_clock::time_point expires);
  // Unpins the rows of `hint`; false (and nothing done) when it is not held.
  bool ReleaseHint(uint64_t hint);
  // Releases the hints expired at `now`; returns how many. Prefetch also does so.
  size_t ReleaseExpiredHints(std::chrono::steady_clock::time_point now);
  PrefetchStats prefetch_stats() const;

  // Counts the rows on disk again, partition by partition, and keeps the counts: for a writer
  // that put rows on disk without the table (a bulk load), whose rows rows() does not know.
  // Call before any request; a no-op for an in-memory table.
  Status RecountRows();

  // Rows held, over all partitions (in memory and on disk).
  uint64_t rows() const { return row_count_.load(std::memory_order_relaxed); }
  // Approximate memory held: rows with their state, plus the index, in bytes.
  uint64_t bytes() const;
  // Bytes of this table's files on disk (0 without a tier).
  uint64_t disk_bytes() const;
  TierStats tier_stats() const;
  // Requested keys served their initial row without being stored, and pushed keys whose update
  // was dropped for it (both 0 unless spec.admit_after > 1).
  uint64_t keys_not_admitted() const { return counters_.Get(TableStat::kNotAdmitted); }
  uint64_t updates_dropped() const { return counters_.Get(TableStat::kUpdatesDropped); }
  // Rows deleted by ExpireRows.
  uint64_t rows_expired() const { return counters_.Get(TableStat::kExpired); }
  // Adds the table's figures (common/table_stats.h) to `out`: its sizes and what it counted.
  void ReportStats(TableStats& out) const;
  // Floats a row takes on disk: dim, optimizer state, and the update time when spec has a TTL.
  static uint32_t PersistedFloatsPerRow(const TableSpec& spec);
  // Deletes every row (in memory and on disk) not updated for spec().ttl_seconds; returns how
  // many. No-op without a TTL. Takes each stripe's lock in turn.
  Result<uint64_t> ExpireRows();
  // Replaces the wall clock (seconds since the epoch) that stamps updates, for tests. Call before
  // any other method.
  void SetClockForTesting(std::function<uint32_t()> now_seconds) {
    new_rows_.SetClockForTesting(std::move(now_seconds));
  }
  // Whether rows beyond memory go to disk (Create with a TierOptions::disk).
  bool tiered() const { return tier_ != nullptr; }

  // Visits every row (partition by partition, each under its stripe's lock). Errors come from
  // the disk tier only.
  Status ForEachRow(const RowVisitor& visit) const;
  // Visits the rows of one partition (partition < num_partitions(), checked).
  Status ForEachRowInPartition(uint32_t partition, const RowVisitor& visit) const;
  // Inserts or overwrites one row with its state, for checkpoint loading and migration.
  // InvalidArgument when row.size() != dim() or state.size() != state_floats().
  Status Restore(uint64_t key, std::span<const float> row, std::span<const float> state);
  // Drops every row of one partition (partition < num_partitions(), checked); returns how many.
  Result<uint64_t> Erase(uint32_t partition);
  // Writes every changed row held in memory to disk (no-op without a tier), e.g. before a clean
  // shutdown.
  Status FlushDirtyRows();

  // The rows of `partition` for checkpoint cut `cut` (a nonzero id) taken after cut `previous`
  // (0: none): when the partition's changes since `previous` are known, visits only the rows
  // changed since and lists the keys deleted since; otherwise visits every row. Then the
  // partition's changes are tracked from `cut` on when `track` (see change_tracker.h), and not at
  // all otherwise. Errors come from the disk tier only.
  Result<PartitionCut> CutPartition(uint32_t partition, uint64_t previous, uint64_t cut, bool track,
                                    const RowVisitor& visit);
  // The rows of `partition` are exactly those of checkpoint cut `cut` (just restored from it): its
  // changes are tracked from `cut` on.
  void TrackChangesFrom(uint32_t partition, uint64_t cut);
  // Changed keys held for incremental cuts and moves (over all partitions).
  uint64_t tracked_change_keys() const;
  // `partition` begins moving out of this server (again): the keys changed from now on are noted
  // for it (change_tracker.h) until EndMoveChanges; MoveChanges lists them, ascending.
  void BeginMoveChanges(uint32_t partition);
  std::vector<uint64_t> MoveChanges(uint32_t partition) const;
  void EndMoveChanges(uint32_t partition);

  // Followers (serving replicas; embedding_table_follow.cc): `follower` follows `partition` from
  // now on (again), due every row first; Unfollow forgets it. Erase drops a partition's followers.
  void Follow(uint32_t partition, uint64_t follower);
  void Unfollow(uint32_t partition, uint64_t follower);
  // The keys of `partition` whose rows changed (were created, updated or deleted) since `follower`
  // last took them, ascending: every key of the partition when it is due every row. nullopt when
  // it does not follow the partition. Errors come from the disk tier only.
  Result<std::optional<std::vector<uint64_t>>> TakeFollowedKeys(uint32_t partition,
                                                                uint64_t follower);
  // Deletes the rows of `keys` (those that exist; returns how many); in memory only.
  Result<uint64_t> EraseKeys(std::span<const uint64_t> keys);
  // Inserts or overwrites the rows of `keys` (`rows` holds keys.size() * dim() floats), as
  // Restore does one by one, in a table without optimizer state (a replica's); a key given twice
  // ends with its last row. InvalidArgument (and nothing written) when the sizes do not match or
  // the table has optimizer state.
  Status RestoreRows(std::span<const uint64_t> keys, std::span<const float> rows);

 private:
  EmbeddingTable(const TableSpec& spec, uint32_t num_partitions, bool tiered);
  // What the tier and its look-ahead share with the table.
  TierTable TierView();
  // The row of `key` in `partition` (whose stripe lock the caller holds), created when missing;
  // nullptr when the key is not admitted yet.
  float* FindOrCreateRow(uint32_t partition, uint64_t key);
  // Calls use(position, row) for every key of the request, creating missing rows, stripe by
  // stripe under the stripe's lock; rows are prefetched `prefetch_floats` floats deep, and the
  // dim floats of `position_data` that use() reads besides the row (a push's gradients) ahead of
  // it too. A pull passes none: prefetching its output lines for writing took miss slots that the
  // rows need (a pull 12% slower, measured key batch by key batch against none). A push (`push_check` set) marks the rows changed. First the
  // keys are hashed to their partitions and vetted: by `pull_check` (if set) for a pull, by
  // push_check->Check for a push. A tiered table's rows come from its tier.
  template <typename Use>
  Status ForEachRequestRow(std::span<const uint64_t> keys, size_t prefetch_floats, Use&& use,
                           const float* position_data, const RequestCheck* pull_check,
                           PushCheck* push_check);
  // Checkpoint cuts (embedding_table_cut.cc). Visits every row of `partition`, whose stripe lock
  // the caller holds.
  Status VisitPartitionLocked(uint32_t partition, const RowVisitor& visit) const;
  // Visits the rows of `keys` (all of `partition`, whose stripe lock the caller holds) that exist
  // and lists the others in `absent`.
  Status VisitKeysLocked(uint32_t partition, std::span<const uint64_t> keys,
                         const RowVisitor& visit, std::vector<uint64_t>& absent) const;
  // Rows of `partition` now, in memory or on disk (the caller holds its stripe lock).
  uint64_t PartitionRowsLocked(uint32_t partition) const;

  const TableSpec spec_;
  const uint64_t table_id_;  // HashName(spec_.name)
  const RowOptimizer optimizer_;
  const uint32_t floats_per_row_;  // PersistedFloatsPerRow: dim + state (+ update time with a TTL)
  TableStatCounters counters_;     // what the table counts of its figures (table_stats.h)
  NewRows new_rows_;
  // The rows in memory: floats_per_row_ floats each, + 1 flags word when tiered.
  StripedRows memory_;
  ChangeTracker changes_;  // each partition guarded by its stripe's lock
  std::atomic<uint64_t> row_count_{0};
  std::unique_ptr<DiskTier> tier_;           // null: every row in memory
  std::unique_ptr<LookAhead> look_ahead_;    // with a tier
};

}  // namespace ember::embedding
