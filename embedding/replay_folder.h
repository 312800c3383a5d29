// ReplayFolder: folds the entries of a replayed push log into the last write of each row and
// record before they reach RocksDB: a hot row pushed a thousand times between two retirements is
// written once, not a thousand times, and rows go in key order (RocksDB's memtable inserts a run
// of ordered keys far faster than scattered ones). Its writes skip RocksDB's own log: the replay
// flushes the memtables before the segments go, and a replay cut short by a kill starts over from
// the segments, which hold absolute values, so replaying twice ends as replaying once. A
// partition deletion first writes what is pending, so each row's writes keep their order around
// it. What is pending is bounded (kMaxPendingBytes, then written out).
//
// Private to embedding/ (RocksStore::Open replays with it). Not thread-safe.
#pragma once

#include <rocksdb/db.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "common/status.h"
#include "embedding/rocks_format.h"
#include "embedding/row_store.h"

namespace ember::embedding {

class ReplayFolder {
 public:
  using FamilyOf = std::function<const rocks_format::RowFamily*(uint32_t id)>;
  ReplayFolder(rocksdb::DB* db, FamilyOf family_of, rocksdb::ColumnFamilyHandle* records)
      : db_(db), family_of_(std::move(family_of)), records_family_(records) {}

  // Takes one replayed entry; DataLoss for rows of an unknown family or of the wrong width.
  Status Add(const rocks_format::LoggedEntry& entry);

  // Writes every pending row (in key order) and record.
  Status Drain();

  uint64_t entries() const { return entries_; }  // taken by Add
  uint64_t written() const { return written_; }  // writes that reached RocksDB

 private:
  static constexpr size_t kMaxPendingBytes = size_t{256} << 20;
  static constexpr size_t kBatchBytes = size_t{4} << 20;
  static constexpr size_t kEntryOverhead = 64;  // of a pending record: its node and key
  static constexpr size_t kRowIndexOverhead = 32;  // of a pending row: its index entries

  static uint64_t PartitionSlot(uint32_t family, uint32_t partition) {
    return uint64_t{family} << 32 | partition;
  }
  struct LastRecordWrite {
    bool deleted = false;
    std::string value;
  };

  static rocksdb::WriteOptions WithoutLog();

  Status MaybeDrain();

  rocksdb::DB* db_;
  FamilyOf family_of_;
  rocksdb::ColumnFamilyHandle* records_family_;
  // The pending rows of each (family, partition), by PartitionSlot; the map orders them as
  // RocksDB orders their keys.
  std::map<uint64_t, RowStore> pending_rows_;
  uint64_t last_slot_ = 0;  // the slot of the last row taken, and its rows
  RowStore* last_rows_ = nullptr;
  uint64_t pending_row_count_ = 0;
  size_t pending_row_bytes_ = 0;  // of pending_rows_: rows and their index entries
  std::unordered_map<std::string, LastRecordWrite> records_;
  size_t record_bytes_ = 0;  // keys and values of records_
  uint64_t entries_ = 0;
  uint64_t written_ = 0;
};
}  // namespace ember::embedding
