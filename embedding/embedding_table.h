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
// budget stay in memory, chosen by CLOCK (clock_ring.h); the others live in a RocksDB column
// family (rocks_store.h). A request first looks its keys up in memory, then reads all misses of a
// stripe with one MultiGet, and creates the rows found nowhere. Rows changed since they were last
// on disk (and rows never stored) are written back when evicted, so every method, rows() and the
// ForEach* visitors see exactly what an all-in-memory table would hold. When the RocksDB store
// keeps a push log (push_log.h), every push's rows are appended to it under the request's stripe
// locks (so the log orders the writes of a key as memory does) and Push returns once the log
// write holding them returned (group commit); the rows stay changed in memory until evicted or
// until the log retires their segment. A caller may add records of its own to that write (Push's
// `also_log`, or its PushCheck), which then reach disk atomically with the rows: the server
// records there which request a push was.
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
// Look-ahead (embedding_table_prefetch.cc): Prefetch(hint, keys) reads the rows of keys a later
// request will use from disk into memory, without holding any lock during the reads, and pins
// them (with the rows already in memory) until ReleaseHint(hint) or the hint expires: eviction
// never drops a pinned row. Pinned rows are bounded by TierOptions::pin_budget_bytes (keys beyond
// it are not pinned, and counted). Prefetching changes no value: a row is loaded only when it is
// on disk, a new key gets the row its request would create (unless the table admits keys by count
// or stamps rows with a TTL: then creating is the request's), and neither happens for a key whose
// row was written to disk while it was read (the read might be older than that row).
//
// Incremental checkpoints (embedding_table_cut.cc): the table notes which keys of each partition
// changed since the checkpoint cuts that wrote it (change_tracker.h), and CutPartition hands a cut
// only those rows and the keys deleted since, under one hold of the partition's stripe lock.
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
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/missing_rows.h"
#include "common/status.h"
#include "common/table_spec.h"
#include "common/table_stats.h"
#include "embedding/admission_filter.h"
#include "embedding/change_tracker.h"
#include "embedding/clock_ring.h"
#include "embedding/memory_budget.h"
#include "embedding/optimizer.h"
#include "embedding/rocks_store.h"
#include "embedding/row_store.h"

namespace ember::embedding {
namespace internal {
struct RequestGroups;
}  // namespace internal

// Where the rows that do not fit in memory go. The default keeps every row in memory.
struct TierOptions {
  RocksTable* disk = nullptr;      // borrowed, outlives the table; null: all rows in memory
  MemoryBudget* budget = nullptr;  // borrowed, shared by the server's tables; null: no eviction
  // Pushes are logged when disk's store keeps a push log (RocksStoreOptions::log_pushes), so an
  // acknowledged push survives the process being killed. Without it, changed rows reach disk when
  // evicted or flushed.

  // Bytes of rows (counted as the budget counts them) that Prefetch may pin at once; 0: none.
  uint64_t pin_budget_bytes = 0;
};

// Counters of look-ahead (all zero for an in-memory table).
struct PrefetchStats {
  uint64_t hinted_keys = 0;      // keys named by hints
  uint64_t prefetched_rows = 0;  // rows read from disk by Prefetch
  uint64_t created_rows = 0;     // new rows Prefetch created ahead of their request
  uint64_t raced_rows = 0;       // rows read but not kept (their stripe wrote to disk meanwhile)
  uint64_t pins_refused = 0;     // keys not pinned for the pin budget
  uint64_t hints_refused = 0;    // hints refused for too many held
  uint64_t hints_expired = 0;
  uint64_t hints = 0;            // held now
  uint64_t pinned_rows = 0;      // now
  uint64_t pinned_bytes = 0;     // now
};

// Counters of a tiered table (all zero for an in-memory one).
struct TierStats {
  uint64_t resident_rows = 0;  // rows in memory
  uint64_t hits = 0;           // request keys found in memory
  uint64_t misses = 0;         // request keys not in memory
  uint64_t loaded = 0;         // misses found on disk
  uint64_t evictions = 0;      // rows dropped from memory
  uint64_t writebacks = 0;     // evicted or flushed rows written to disk
};

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
  class PushCheck {
   public:
    enum class Verdict {
      kApply,  // apply the push
      kSkip,   // apply nothing and return OK: the caller took care of the push
    };
    virtual ~PushCheck() = default;
    // Looks at the push's keys with the partition of each (partitions[i] of keys[i]) before any
    // row is read or changed, and before any stripe lock is taken (so it may wait). An error it
    // returns ends the push with that error, nothing done.
    virtual Result<Verdict> Check(std::span<const uint64_t> keys,
                                  std::span<const uint32_t> partitions) = 0;
    // When logs_pushes() and Check said kApply: called once with the batch of the push's rows,
    // before it is written, under the request's stripe locks (it must not call the table).
    virtual void AppendWrites(RowWrites& batch) = 0;
  };

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
  uint32_t num_partitions() const { return num_partitions_; }
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
  // and its records are written with them; otherwise it is not called.
  Status Push(std::span<const uint64_t> keys, std::span<const float> grads,
              const PushLogHook& also_log = nullptr);
  // The same, with `check` deciding on the push first (after the size check) and adding the
  // records to log with its rows.
  Status Push(std::span<const uint64_t> keys, std::span<const float> grads, PushCheck& check);
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
  uint64_t rows() const { return rows_.load(std::memory_order_relaxed); }
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
  void SetClockForTesting(std::function<uint32_t()> now_seconds) { now_ = std::move(now_seconds); }
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
  // Changed keys held for incremental cuts (over all partitions).
  uint64_t tracked_change_keys() const;

 private:
  // Cache-line aligned so that neighbouring stripes' locks do not share a line.
  struct alignas(64) Stripe {
    mutable std::mutex mu;
    // Guarded by mu, for Prefetch: when each key of the stripe was last written to disk (by
    // disk_writes, counting the stripe's writes) since disk_generation began; a new generation
    // begins when the map is full, or when rows changed on disk wholesale.
    uint64_t disk_generation = 0;
    uint64_t disk_writes = 0;
    std::unordered_map<uint64_t, uint64_t> written;
  };

  // The disk side of a tiered table (embedding_table_internal.h).
  struct Tier;
  using RowUse = std::function<void(uint32_t position, float* row)>;

  EmbeddingTable(const TableSpec& spec, uint32_t num_partitions, const TierOptions* tier);
  void InitTier(const TierOptions& tier);
  std::mutex& StripeLock(uint32_t partition) const {
    return stripes_[partition & (num_stripes_ - 1)].mu;
  }
  // The row of `key` in `partition` (whose stripe lock the caller holds), created when missing;
  // nullptr when the key is not admitted yet.
  float* FindOrCreateRow(uint32_t partition, uint64_t key);
  // Whether a key without a row gets one now (counts the occurrence).
  bool Admit(uint64_t key) { return admission_ == nullptr || admission_->CountAndAdmit(key); }
  // Writes the row a new key starts with into `row`: its initial weights, the optimizer's initial
  // state and (with a TTL) the time now.
  void InitNewRow(uint64_t key, float* row) const;
  // Stamps `row` as updated now (no-op without a TTL).
  void StampUpdate(float* row) const;
  uint32_t NowSeconds() const;
  // Writes the initial value of a key that is not admitted into `row` (scratch space of the
  // request, dropped after it) and counts it; returns `row`.
  float* InitialRowNotStored(uint64_t key, bool push, float* row);
  // Calls use(position, row) for every key of the request, creating missing rows, stripe by
  // stripe under the stripe's lock; rows are prefetched `prefetch_floats` floats deep, and the
  // dim floats of `position_data` that use() reads or writes besides the row (a push's gradients,
  // a pull's output) ahead of it too. A push (`push_check` set) marks the rows changed. First the
  // keys are hashed to their partitions and vetted: by `pull_check` (if set) for a pull, by
  // push_check->Check for a push.
  template <typename Use>
  Status ForEachRequestRow(std::span<const uint64_t> keys, size_t prefetch_floats, Use&& use,
                           const float* position_data, const RequestCheck* pull_check,
                           PushCheck* push_check);
  // The same for a tiered table (embedding_table_tier_request.cc), after the keys were grouped
  // and vetted; `push_check`'s records are logged with a push's rows.
  Status ForEachTieredRequestRow(std::span<const uint64_t> keys,
                                 internal::RequestGroups& groups, const RowUse& use,
                                 const float* position_data, PushCheck* push_check);
  // Its steps, each for one stripe whose lock the caller holds. The rows in memory, marked
  // referenced; `missed` gets the others (indexes into groups.order).
  void LookUpStripeLocked(uint32_t stripe, std::span<const uint64_t> keys,
                          internal::RequestGroups& groups, bool push,
                          std::vector<uint32_t>& missed);
  // Where a logged push's rows go: the batch, and the log segment active when it began.
  struct PushLogging {
    RowWrites writes;
    uint64_t segment = 0;
  };
  // use() on every row of the stripe; a push marks them changed and, with `logging`, adds them
  // (and the partitions' raised counts of rows on disk) to its batch.
  void UseStripeRowsLocked(uint32_t stripe, std::span<const uint64_t> keys,
                           internal::RequestGroups& groups, const RowUse& use,
                           const float* position_data, bool push, PushLogging* logging);
  // Evicts from the stripe's partitions while over the budget (at most kEvictionsPerInsert
  // victims per row the request inserted there).
  Status EvictForStripeLocked(uint32_t stripe, const internal::RequestGroups& groups,
                              size_t inserted);
  // After a failed request: the rows of `stripes`, changed but never logged, no longer say that
  // their last change is in the log (so that relogging catches them).
  void ForgetLogSegments(std::span<const uint32_t> stripes, const internal::RequestGroups& groups);
  // Under the lock of their stripe: gives each missed key of a
  // tiered request (`missed`: indexes into groups.order) its row, read from disk (one MultiGet),
  // else new (or, for a key not admitted yet, a scratch row), and returns how many rows it put
  // in memory.
  Result<size_t> LoadMissesLocked(std::span<const uint64_t> keys, internal::RequestGroups& groups,
                                  std::span<const uint32_t> missed, bool push);
  // Tiered counterparts of the public methods of the same name.
  // Visits every row of `partition`, whose stripe lock the caller holds.
  Status VisitPartitionLocked(uint32_t partition, const RowVisitor& visit) const;
  // Visits the rows of `keys` (all of `partition`, whose stripe lock the caller holds) that exist
  // and lists the others in `absent`.
  Status VisitKeysLocked(uint32_t partition, std::span<const uint64_t> keys,
                         const RowVisitor& visit, std::vector<uint64_t>& absent) const;
  // Rows of `partition` now, in memory or on disk (the caller holds its stripe lock).
  uint64_t PartitionRowsLocked(uint32_t partition) const;
  Status RestoreTiered(uint32_t partition, uint64_t key, std::span<const float> row,
                       std::span<const float> state);
  Result<uint64_t> EraseTiered(uint32_t partition);
  // Prefetch's passes (embedding_table_prefetch.cc): pin the rows in memory and note the others;
  // read those from disk in one MultiGet, as many as can be pinned, holding no lock; insert and
  // pin what was read, stripe by stripe (one row: InsertPrefetchedRow, under the stripe's lock),
  // unless its stripe wrote it to disk meanwhile.
  struct PrefetchPass;
  void PinResidentRows(PrefetchPass& pass);
  Status ReadMissingRows(PrefetchPass& pass);
  Status InsertPrefetchedRows(PrefetchPass& pass);
  void InsertPrefetchedRow(PrefetchPass& pass, size_t m, uint32_t stripe,
                           std::vector<uint32_t>& touched);
  // Unpins the rows of `keys` still in memory, stripe by stripe.
  void Unpin(std::span<const uint64_t> keys);
  // Note that rows of `partition` (whose stripe lock the caller holds) changed on disk: any of
  // them, or the row of `key`.
  void NoteDiskWrite(uint32_t partition);
  void NoteRowWritten(uint32_t partition, uint64_t key);
  // Durable row counts (Tier::durable_rows): the record of `partition`'s count `count`, added to
  // `batch`; loading them at Create (counting partitions once for a store written without them).
  void AddCountRecord(RowWrites& batch, uint32_t partition, uint64_t count) const;
  Result<uint64_t> LoadDurableCounts();
  Result<uint64_t> CountDurableRows();  // counts every partition on disk and keeps the counts
  // Marks `row` of `partition` durable (kOnDisk) in a write being made, counting it; false when it
  // was already. The caller adds the partition's new count to that write (under the stripe lock).
  bool MarkDurable(uint32_t partition, float* row);
  // Before `rows_to_write` changed rows go to RocksDB: waits until every push logged so far is
  // written to the push log (a no-op without one, or with no rows).
  Status WaitForLoggedPushes(size_t rows_to_write);
  // Appends every changed row held in memory to the store's push log, partition by partition
  // under its stripe lock, and waits until written (run by the log before it drops a segment).
  Status RelogDirtyRows(uint64_t through);
  // Whether a tiered table's memory budget is exceeded (false without a budget).
  bool OverBudget() const;
  // Sweeps the CLOCK hand of `partition` (whose stripe lock the caller holds) to a row neither
  // pinned, chosen already nor referenced since the hand last passed (clearing the reference bits
  // it passes), marks it chosen and returns it with its slot in the ring; none within two sweeps.
  struct ChosenVictim {
    size_t slot;
    float* row;
  };
  std::optional<ChosenVictim> ChooseVictimLocked(uint32_t partition);
  // Evicts rows of `partitions` (whose stripe lock the caller holds) while the budget is
  // exceeded, at most `max_rows`, writing changed ones back first.
  Status EvictWhileOverBudget(std::span<const uint32_t> partitions, size_t max_rows);

  const TableSpec spec_;
  const uint64_t table_id_;  // HashName(spec_.name)
  const RowOptimizer optimizer_;
  const uint32_t floats_per_row_;  // PersistedFloatsPerRow: dim + state (+ update time with a TTL)
  const uint32_t stored_floats_;   // per row in memory: floats_per_row_, + 1 flags word if tiered
  const uint32_t num_partitions_;
  const uint32_t num_stripes_;  // a power of two: partition p is in stripe p % num_stripes_
  std::unique_ptr<Stripe[]> stripes_;
  std::vector<RowStore> stores_;  // one per partition, guarded by its stripe's lock
  ChangeTracker changes_;         // each partition guarded by its stripe's lock
  std::atomic<uint64_t> rows_{0};
  std::unique_ptr<Tier> tier_;  // null: every row in memory
  std::unique_ptr<AdmissionFilter> admission_;  // null: every key is stored
  TableStatCounters counters_;  // what the table counts of its figures (table_stats.h)
  std::function<uint32_t()> now_;  // seconds since the epoch
};

}  // namespace ember::embedding
