// RocksStore: the on-disk tier of one server's tables, a RocksDB instance in the server's data
// directory with one column family per table.
//
// A row is stored under a 12-byte key, the big-endian partition (4 bytes) then the big-endian
// feature key (8 bytes), so a partition's rows are contiguous (one range to scan, copy or delete).
// The value is the row's floats followed by its optimizer state, raw in host byte order
// (dim + state_floats floats); a value of any other length is reported as DataLoss.
//
// Beside the rows, the database's default column family holds records of other layers (raw keys
// and values, such as a server's record of the pushes it applied): RowWrites puts them in the same
// atomic batch as rows, so a crash keeps both or neither. Keys should start with a prefix naming
// their owner.
//
// Writes go through RocksDB's write-ahead log. RowWrites::sync asks for an fsync of the log before
// the write returns (survives a machine crash); without it the log is in the OS page cache when the
// write returns, which survives the process being killed but not a power loss.
//
// With RocksStoreOptions::log_pushes the store also keeps a PushLog (push_log.h) in
// PATH/ember-pushlog, the group-committed log of tables' pushes, and Open replays what a killed
// process left there before anything reads the rows.
//
// Thread-safety: every method may be called from many threads at once (RocksDB serialises
// writers itself). A RocksTable borrowed from Table() lives as long as its RocksStore.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "embedding/push_log.h"

namespace rocksdb {
class ColumnFamilyHandle;
class DB;
class WriteBatch;
}  // namespace rocksdb

namespace ember::embedding {

class RocksStore;
class RocksTable;

// Rows of one table, and records, to write in one atomic batch.
class RowWrites {
 public:
  // `table` must outlive the batch.
  explicit RowWrites(const RocksTable& table);
  // A batch of records only (Put and Delete of rows are bugs); `store` must outlive it.
  explicit RowWrites(const RocksStore& store);
  ~RowWrites();
  RowWrites(RowWrites&&) noexcept;
  RowWrites& operator=(RowWrites&&) noexcept;

  // Makes room for `rows` more row puts without growing the batch again.
  void ReserveRows(size_t rows);
  // Adds one row (weights followed by state) of `partition`.
  void Put(uint32_t partition, uint64_t key, std::span<const float> row_and_state);
  // Adds the deletion of one row.
  void Delete(uint32_t partition, uint64_t key);
  // Adds the deletion of every row of `partition`.
  void DeletePartition(uint32_t partition);
  // Adds a record (any key and value; see RocksStore::ForEachRecord), or its deletion.
  void PutRecord(std::string_view key, std::string_view value);
  void DeleteRecord(std::string_view key);
  // Rows put or deleted.
  size_t size() const { return rows_; }
  // Nothing put or deleted, rows or records.
  bool empty() const { return rows_ == 0 && records_ == 0; }
  void Clear();
  // The batch as PushLog records it (its puts and deletions, in ember's own encoding: a log is
  // decoded with bounds checks when replayed).
  std::string_view LogPayload() const;
  // Appends the batch to `log` as one record, its records kept beside the segment
  // (PushLog::Append's `kept`, which the store persists when the segment retires). AppendToLog
  // copies the payload and leaves the batch for a Write; MoveToLog moves it out and leaves the
  // batch empty.
  PushLog::Ticket AppendToLog(PushLog& log, PushLog::Origin origin = PushLog::Origin::kPush) const;
  PushLog::Ticket MoveToLog(PushLog& log, PushLog::Origin origin = PushLog::Origin::kPush);
  // Fsync the write-ahead log before Write returns.
  bool sync = false;

 private:
  friend class RocksTable;
  friend class RocksStore;
  std::unique_ptr<rocksdb::WriteBatch> batch_;
  std::string log_;  // LogPayload
  std::string kept_;  // its record puts and deletions alone, in the same encoding
  rocksdb::ColumnFamilyHandle* family_;         // the table's rows; null: records only
  rocksdb::ColumnFamilyHandle* record_family_;  // the default column family
  uint32_t floats_per_row_ = 0;                 // of the table's rows; 0: records only
  size_t rows_ = 0;
  size_t records_ = 0;
};

// One table's rows on disk (a column family).
class RocksTable {
 public:
  using RowVisitor = std::function<void(uint64_t key, std::span<const float> row_and_state)>;

  // `records` is the default column family (records beside the rows).
  RocksTable(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family,
             rocksdb::ColumnFamilyHandle* records, uint32_t floats_per_row, PushLog* push_log);

  uint32_t floats_per_row() const { return floats_per_row_; }
  // The store's push log (with RocksStoreOptions::log_pushes), else null.
  PushLog* push_log() const { return push_log_; }

  // Looks every (partitions[i], keys[i]) up in one MultiGet; found(i, row_and_state) is called for
  // each key present. DataLoss for a stored value of the wrong length, other RocksDB errors as
  // Unavailable.
  Status MultiGet(std::span<const uint32_t> partitions, std::span<const uint64_t> keys,
                  const std::function<void(size_t i, std::span<const float>)>& found) const;
  // Writes the batch atomically and clears it.
  Status Write(RowWrites& writes);
  // Visits the stored rows of one partition in key order.
  Status ForEachInPartition(uint32_t partition, const RowVisitor& visit) const;
  // Counts the stored rows (a full key scan).
  Result<uint64_t> CountRows() const;
  // Counts the stored rows of one partition (a scan of its keys).
  Result<uint64_t> CountRowsInPartition(uint32_t partition) const;
  // Visits the store's records whose key starts with `prefix` (RocksStore::ForEachRecord).
  Status ForEachRecord(std::string_view prefix,
                       const std::function<void(std::string_view key, std::string_view value)>&
                           visit) const;
  // Bytes of this table's SST files on disk (RocksDB's estimate, memtables excluded).
  uint64_t DiskBytes() const;

 private:
  friend class RowWrites;
  rocksdb::DB* const db_;
  rocksdb::ColumnFamilyHandle* const family_;
  rocksdb::ColumnFamilyHandle* const records_;
  const uint32_t floats_per_row_;
  PushLog* const push_log_;
};

struct RocksStoreOptions {
  std::string path;  // the data directory; created when missing
  // Block cache for reads of cold rows, in bytes. Small by default: hot rows are cached above,
  // in the table's own memory, and the OS page cache also holds recently read blocks.
  uint64_t block_cache_bytes = uint64_t{32} << 20;
  // Keep a push log: tables log every push there, and acknowledge it once written.
  bool log_pushes = false;
  bool sync_log = false;  // fdatasync each write of the push log
  uint64_t log_segment_bytes = uint64_t{1} << 30;  // PushLogOptions::segment_bytes
  uint64_t log_kept_bytes_limit = uint64_t{64} << 20;  // PushLogOptions::kept_bytes_limit
};

class RocksStore {
 public:
  // Opens (creating when missing) the database and one column family per entry of `tables`
  // (name -> floats per row). Column families of other tables found on disk are kept untouched.
  // Unavailable or DataLoss naming the path when RocksDB cannot open it.
  static Result<std::unique_ptr<RocksStore>> Open(const RocksStoreOptions& options,
                                                  const std::map<std::string, uint32_t>& tables);
  ~RocksStore();
  RocksStore(const RocksStore&) = delete;
  RocksStore& operator=(const RocksStore&) = delete;

  // The table opened under `name`, or nullptr.
  RocksTable* Table(std::string_view name);
  const std::string& path() const { return path_; }
  // Flushes memtables to SST files (so the log need not be replayed at the next start).
  Status Flush();
  // The push log (with RocksStoreOptions::log_pushes), else null.
  PushLog* push_log() const { return push_log_.get(); }
  // The writes of rows and records that Open replayed from a push log left behind (0: none).
  uint64_t replayed_log_writes() const { return replayed_log_writes_; }

  // Visits the records whose key starts with `prefix`, in key order.
  Status ForEachRecord(std::string_view prefix,
                       const std::function<void(std::string_view key, std::string_view value)>&
                           visit) const;
  // Writes a batch (of records, or rows and records) atomically and clears it.
  Status Write(RowWrites& writes);

 private:
  friend class RowWrites;
  RocksStore() = default;
  rocksdb::ColumnFamilyHandle* record_family() const { return handles_.front(); }

  // Replays the push log left in `dir` into the database (rows of `tables`, name -> floats per
  // row, and records; any other entry is DataLoss), then removes its segments; returns the number
  // of the next segment.
  Result<uint64_t> ReplayPushLog(const std::string& dir,
                                 const std::map<std::string, uint32_t>& tables);
  // Persists the records of retired push log segments (PushLog::Retire).
  Status PersistLoggedRecords(const std::vector<RetiredSegment>& segments);

  std::string path_;
  bool sync_log_ = false;
  uint64_t replayed_log_writes_ = 0;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // owned: destroyed before db_
  std::map<std::string, std::unique_ptr<RocksTable>, std::less<>> tables_;
  std::unique_ptr<PushLog> push_log_;  // destroyed first (its thread uses db_)
};

}  // namespace ember::embedding
