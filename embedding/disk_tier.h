// DiskTier: the disk side of a tiered table. Only rows that fit the memory budget stay in memory,
// chosen by CLOCK (clock_ring.h); the others live in a RocksDB column family (rocks_store.h),
// with a cold row file (cold_row_file.h) in front of it. A request first looks its keys up in
// memory, then in the cold row file, then reads the rest of a stripe's misses with one MultiGet,
// and creates the rows found nowhere; so the table sees exactly what an all-in-memory table would
// hold. When the store keeps a push log (push_log.h), every push's rows are appended to it under
// the request's stripe locks (so the log orders the writes of a key as memory does) and the push
// returns once the log write holding them returned (group commit).
//
// Where a changed row goes when evicted: into the cold row file, stored changed, when a version of
// it is durable already (kOnDisk) and the file has room; else to RocksDB. A changed row stays
// changed, in memory or in the file, until flushed or written back (the file's when their
// partition is expired, recounted or flushed); while the push log keeps segments, the log's
// retirement of a segment logs again the changed rows whose last change it held, wherever they
// are. The cold row file's unchanged rows are what RocksDB holds.
//
// Each partition's count of durable rows (on disk, or in memory with kOnDisk) is persisted with
// every write that changes it, so that opening a table does not count its rows.
//
// The tier works on its table's StripedRows, whose rows carry a flags word (tier_row_flags.h), and
// follows the table's locking: a method named ...Locked needs the stripe lock of the partitions it
// is given; the others take the locks they need.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/table_stats.h"
#include "embedding/change_tracker.h"
#include "embedding/clock_ring.h"
#include "embedding/cold_row_file.h"
#include "embedding/hint_pins.h"
#include "embedding/memory_budget.h"
#include "embedding/new_rows.h"
#include "embedding/push_check.h"
#include "embedding/rocks_store.h"
#include "embedding/striped_rows.h"

namespace ember::embedding {

// Where the rows that do not fit in memory go. The default keeps every row in memory.
struct TierOptions {
  RocksTable* disk = nullptr;      // borrowed, outlives the table; null: all rows in memory
  MemoryBudget* budget = nullptr;  // borrowed, shared by the server's tables; null: no eviction
  // Pushes are logged when disk's store keeps a push log (RocksStoreOptions::log_pushes), so an
  // acknowledged push survives the process being killed. Without it, changed rows reach disk when
  // evicted or flushed.

  // Bytes of rows (counted as the budget counts them) that look-ahead may pin at once; 0: none.
  uint64_t pin_budget_bytes = 0;

  // Rows that left memory are also kept in a cold row file (cold_row_file.h) of about this many
  // bytes in this directory, read before RocksDB; empty or 0: none (every miss reads RocksDB).
  std::string cold_file_dir;
  uint64_t cold_file_bytes = 0;
};

// Counters of a tiered table (all zero for an in-memory one).
struct TierStats {
  uint64_t resident_rows = 0;  // rows in memory
  uint64_t hits = 0;           // request keys found in memory
  uint64_t misses = 0;         // request keys not in memory
  uint64_t loaded = 0;         // misses found on disk
  uint64_t cold_file_hits = 0;  // rows read from the cold row file instead of RocksDB
  uint64_t evictions = 0;      // rows dropped from memory
  uint64_t writebacks = 0;     // evicted or flushed rows written to RocksDB
  uint64_t kept_changed = 0;   // changed rows evicted into the cold row file instead of RocksDB
};

// What a tier (and its look-ahead) shares with its table, all borrowed from the table.
struct TierTable {
  const std::string& name;
  uint64_t table_id;  // HashName(name)
  uint32_t dim;
  uint32_t floats_per_row;  // persisted per row: weights, state (and update time)
  StripedRows& rows;        // rows of floats_per_row + 1 floats: the last is the flags word
  NewRows& new_rows;
  ChangeTracker& changes;            // guarded by the stripe locks
  std::atomic<uint64_t>& row_count;  // rows of the table, in memory and on disk
  TableStatCounters& counters;
};

class DiskTier {
 public:
  using RowUse = std::function<void(uint32_t position, float* row)>;

  // The tier of `table` over options.disk (non-null), whose rows must have table.floats_per_row
  // floats (else InvalidArgument); the rows already on disk are counted into table.row_count.
  // Errors of the disk are returned.
  static Result<std::unique_ptr<DiskTier>> Open(const TierOptions& options, TierTable table);
  ~DiskTier();
  DiskTier(const DiskTier&) = delete;
  DiskTier& operator=(const DiskTier&) = delete;

  // Whether pushes are logged before they return (the store keeps a push log).
  bool logs_pushes() const { return disk_.push_log() != nullptr; }
  // Counts the rows on disk again, partition by partition, and keeps the counts (for a writer
  // that put rows on disk without the table: a bulk load).
  Status RecountRows();

  // Calls use(position, row) for every key of a request grouped by `groups` (and vetted), stripe
  // by stripe under its lock: the rows in memory, then the misses from disk or new (a key not
  // admitted yet gets a scratch row), then each row used (position_data: the dim floats per
  // position use() reads besides the row, prefetched; null for none). A push (`push_check` set) marks its rows
  // changed and, with a push log, logs them with push_check's records before returning. Then
  // room is made by eviction.
  Status ForEachRequestRow(std::span<const uint64_t> keys, RequestGroups& groups, const RowUse& use,
                           const float* position_data, PushCheck* push_check);

  // Inserts or overwrites one row (weights and state) in memory, as changed.
  Status Restore(uint32_t partition, uint64_t key, std::span<const float> row,
                 std::span<const float> state);
  // Drops every row of `partition`, on disk and in memory; returns how many.
  Result<uint64_t> Erase(uint32_t partition);
  // Writes every changed row held in memory or in the cold row file to disk.
  Status FlushDirtyRows();
  // Deletes the rows of `partition` that `is_expired` says are (`victims`: those in memory, not
  // yet erased from it) on disk, with the partition's count; returns how many rows only on disk
  // expired (noted as changed). The caller then erases the victims from memory and calls
  // ForgetErasedLocked.
  Result<uint64_t> ExpireOnDiskLocked(uint32_t partition, std::span<const uint64_t> victims,
                                      const std::function<bool(const float* row)>& is_expired);
  // After rows of `partition` (`erased` of them) were erased from memory: the CLOCK ring holds
  // the rows left.
  void ForgetErasedLocked(uint32_t partition, size_t erased);

  // Reads the rows of `keys` (in `partitions`) from disk: found(i, row_and_state) for each found,
  // which copies the row and uses nothing of the tier (see ReadStoredRows).
  Status ReadRows(std::span<const uint32_t> partitions, std::span<const uint64_t> keys,
                  const std::function<void(size_t i, std::span<const float>)>& found) const;
  // A row read from disk, with the flags it carries into memory: kOnDisk, and for a changed row
  // of the cold row file also kDirty and where its last change was logged.
  using StoredRowFound =
      std::function<void(size_t i, std::span<const float> row_and_state, uint32_t flags)>;
  // ReadRows for rows about to be put in memory (look-ahead's).
  Status ReadRowsForMemory(std::span<const uint32_t> partitions, std::span<const uint64_t> keys,
                           const StoredRowFound& found) const {
    return ReadStoredRows(partitions, keys, found, /*keep=*/false);
  }
  // Visits the rows of `partition` that are on disk but not in memory.
  Status ForEachRowOnlyOnDiskLocked(uint32_t partition, const RocksTable::RowVisitor& visit) const;
  // Rows of `partition` now, in memory or on disk.
  uint64_t PartitionRowsLocked(uint32_t partition) const;

  TierStats stats() const;
  uint64_t disk_bytes() const { return disk_.DiskBytes(); }

  // ---- For look-ahead (look_ahead.h) ----
  // Per stripe, guarded by its lock: when each key of the stripe was last written to disk (by
  // `writes`, counting the stripe's writes) since `generation` began; a new generation begins
  // when the map is full, or when rows changed on disk wholesale.
  struct WriteNotes {
    uint64_t generation = 0;
    uint64_t writes = 0;
    std::unordered_map<uint64_t, uint64_t> written;
  };
  const WriteNotes& write_notes(uint32_t stripe) const { return write_notes_[stripe]; }
  // Brackets a look-ahead pass, from before it first takes a stripe lock to after its last use of
  // the write notes: while no pass is in flight, rows written to disk need not be noted (a pass
  // that begins later reads them after they were written).
  void BeginNotedPass() { passes_in_flight_.fetch_add(1); }
  void EndNotedPass() { passes_in_flight_.fetch_sub(1); }
  HintPins& pins() { return *pins_; }
  const HintPins& pins() const { return *pins_; }
  const TierTable& table() const { return table_; }
  bool OverBudget() const { return budget_ != nullptr && budget_->exceeded(); }
  // Accounts for the `row` of `key` just inserted into `partition`'s store: its CLOCK slot, the
  // resident count and the budget.
  void AddResidentLocked(uint32_t partition, uint64_t key, float* row);
  // Evicts rows of `partitions` while the budget is exceeded, at most `max_rows`, writing changed
  // ones back first.
  Status EvictWhileOverBudget(std::span<const uint32_t> partitions, size_t max_rows);
  // Writes evicted rows back (`writes`), with the count records of the partitions that gained
  // rows on disk (`new_durable`: how many, by partition), after the pushes logged before them.
  Status WriteVictimsBack(RowWrites& writes, const std::map<uint32_t, uint64_t>& new_durable);

 private:
  // Victims an eviction chooses per row a request inserted, at most: a table far over its budget
  // (after the budget was lowered, or when another table grew) converges without one request
  // evicting everything.
  static constexpr size_t kEvictionsPerInsert = 2;

  DiskTier(const TierOptions& options, TierTable table);

  // ---- The request path (disk_tier_request.cc), each step for one locked stripe ----
  // The rows in memory, marked referenced; `missed` gets the others (indexes into groups.order).
  void LookUpStripeLocked(uint32_t stripe, std::span<const uint64_t> keys, RequestGroups& groups,
                          bool push, std::vector<uint32_t>& missed);
  // Gives each missed key its row, read from disk (one MultiGet), else new (or, for a key not
  // admitted yet, a scratch row); returns how many rows it put in memory.
  Result<size_t> LoadMissesLocked(std::span<const uint64_t> keys, RequestGroups& groups,
                                  std::span<const uint32_t> missed, bool push);
  // Where a logged push's rows go: the batch, and the log segment active when it began.
  struct PushLogging {
    RowWrites writes;
    uint64_t segment = 0;
  };
  // use() on every row of the stripe; a push marks them changed and, with `logging`, adds them
  // (and the partitions' raised counts of durable rows) to its batch.
  void UseStripeRowsLocked(uint32_t stripe, std::span<const uint64_t> keys, RequestGroups& groups,
                           const RowUse& use, const float* position_data, bool push,
                           PushLogging* logging);
  // Locks `stripes` (ascending) and evicts from the request's partitions in them while over the
  // budget: at most kEvictionsPerInsert victims per row the request inserted.
  Status EvictForRequest(std::span<const uint32_t> stripes, const RequestGroups& groups,
                         size_t inserted);
  // After a failed request: the rows of `stripes`, changed but never logged, no longer say that
  // their last change is in the log (so that relogging catches them).
  void ForgetLogSegments(std::span<const uint32_t> stripes, const RequestGroups& groups);

  // ---- Eviction and write-back (disk_tier_eviction.cc) ----
  // Sweeps the CLOCK hand of `partition` to a row neither pinned, chosen already nor referenced
  // since the hand last passed (clearing the reference bits it passes), marks it chosen and
  // returns it with its slot in the ring; none within two sweeps.
  struct ChosenVictim {
    size_t slot;
    float* row;
  };
  std::optional<ChosenVictim> ChooseVictimLocked(uint32_t partition);
  // Before `rows_to_write` changed rows go to RocksDB: waits until every push logged so far is
  // written to the push log (a no-op without one, or with no rows).
  Status WaitForLoggedPushes(size_t rows_to_write);
  // Appends every changed row held in memory or in the cold row file whose last change may be in
  // a segment up to `through` to the store's push log, partition by partition under its stripe
  // lock, and waits until written (run by the log before it drops a segment).
  Status RelogDirtyRows(uint64_t through);

  // ---- The cold row file (disk_tier_cold.cc) ----
  // Reads the rows of `keys` (in `partitions`): each from the cold row file when it holds it, the
  // others with one MultiGet; found(i, row_and_state, flags) for each found (for a row of the file,
  // under a lock of the file: `found` copies the row and must not use the file). With `keep` (under
  // the stripe locks of `partitions`) the rows read from RocksDB are stored in the cold row file.
  Status ReadStoredRows(std::span<const uint32_t> partitions, std::span<const uint64_t> keys,
                        const StoredRowFound& found, bool keep) const;
  // After a write of rows to RocksDB (under their stripe locks): the cold row file holds them too,
  // unchanged.
  struct ColdRow {
    uint32_t partition;
    uint64_t key;
    float* row;  // read only (with its flags word); the flusher marks the rows it kept
  };
  void KeepCold(std::span<const ColdRow> rows) const;
  // Stores the changed `rows` (with their flags words) in the cold row file instead of RocksDB;
  // refused(i) for each row the file has no room for.
  void KeepChangedColdLocked(std::span<const ColdRow> rows,
                             const std::function<void(size_t i)>& refused);
  // Calls visit(key, row_and_flags) for each changed row of `partition` in the cold row file and
  // not in memory, each once.
  void ForEachChangedColdRowLocked(
      uint32_t partition,
      const std::function<void(uint64_t key, std::span<const float> row_and_flags)>& visit) const;
  // Writes the changed rows of `partition` in the cold row file to RocksDB; they stay in the file,
  // unchanged.
  Status WriteBackChangedColdRowsLocked(uint32_t partition);
  // Adds the changed rows of `partition` in the cold row file whose last change may be only in
  // log segments up to `through` to `writes`, noting `segment` as where they are logged now.
  void RelogChangedColdRowsLocked(uint32_t partition, uint64_t through, uint64_t segment,
                                  RowWrites& writes);
  // Whether any changed row is in the cold row file (with no request in flight).
  bool AnyChangedColdRow() const;

  // ---- Durable counts (disk_tier.cc) ----
  // The record of `partition`'s count `count`, added to `batch`.
  void AddCountRecord(RowWrites& batch, uint32_t partition, uint64_t count) const;
  // Loads the counts (counting every partition once for a store written without them) and
  // returns their total.
  Result<uint64_t> LoadDurableCounts();
  Result<uint64_t> CountDurableRows();  // counts every partition on disk and keeps the counts
  // Marks `row` of `partition` durable (kOnDisk) in a write being made, counting it; false when it
  // was already. The caller adds the partition's new count to that write.
  bool MarkDurable(uint32_t partition, float* row);
  // Notes that rows of `partition` changed on disk: any of them, or the row of `key`.
  void NoteDiskWrite(uint32_t partition);
  void NoteRowWritten(uint32_t partition, uint64_t key);

  const TierTable table_;
  RocksTable& disk_;
  MemoryBudget* const budget_;     // null: no eviction
  const uint64_t row_bytes_;       // a row in memory, as the budget counts it
  std::vector<ClockRing> clocks_;  // per partition, guarded by its stripe's lock
  // Per partition, guarded by its stripe's lock: the rows a restart would find (those only on
  // disk, and those in memory with kOnDisk).
  std::vector<uint64_t> durable_rows_;
  std::vector<WriteNotes> write_notes_;  // per stripe, guarded by its lock
  std::unique_ptr<HintPins> pins_;
  std::unique_ptr<ColdRowFile> cold_;  // null: none; rows of floats_per_row + 1 floats (flags)
  // Per partition, guarded by its stripe's lock: the keys of the changed rows in the cold row
  // file (some more than once, or since unchanged), and how many were left at the last pruning.
  struct ChangedColdKeys {
    std::vector<uint64_t> keys;
    size_t pruned_size = 0;
  };
  std::vector<ChangedColdKeys> changed_cold_;
  std::atomic<uint64_t> resident_{0};
  std::atomic<uint64_t> loaded_{0};
  mutable std::atomic<uint64_t> cold_hits_{0};
  std::atomic<uint32_t> passes_in_flight_{0};  // sequentially consistent, see BeginNotedPass
  std::atomic<uint64_t> writebacks_{0};
  std::atomic<uint64_t> kept_changed_{0};
  uint64_t relogger_ = 0;  // the handle of RelogDirtyRows in the push log; 0: none
};

}  // namespace ember::embedding
