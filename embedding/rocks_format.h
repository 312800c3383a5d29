// How the RocksDB tier writes what it stores and logs, shared by the store (rocks_store.cc) and
// the replay of its push log (replay_folder.cc): the 12-byte row keys, the encoding of a batch of
// writes as the push log records it (RowWrites::LogPayload) and its decoding with bounds checks,
// and the translation of RocksDB's statuses. Private to embedding/.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ember::embedding::rocks_format {

// A row's key: the big-endian partition (4 bytes), then the big-endian feature key (8 bytes), so
// that a partition's rows are contiguous.
constexpr size_t kKeyBytes = 12;
using EncodedKey = std::array<char, kKeyBytes>;

EncodedKey EncodeKey(uint32_t partition, uint64_t key);
// The 4-byte prefix of the keys of `partition`.
std::array<char, 4> EncodePartition(uint32_t partition);
// The feature key of an encoded row key (kKeyBytes bytes at `encoded`).
uint64_t DecodeFeatureKey(const char* encoded);

inline rocksdb::Slice AsSlice(const EncodedKey& key) { return {key.data(), key.size()}; }
inline rocksdb::Slice AsSlice(std::string_view bytes) { return {bytes.data(), bytes.size()}; }

// OK, DataLoss for corruption, Unavailable for any other error; `what` says what was being done.
Status FromRocks(const rocksdb::Status& status, const std::string& what);
// DataLoss unless a stored value of key `key` holds exactly floats_per_row floats.
Status CheckValueSize(size_t bytes, uint32_t floats_per_row, uint64_t key);
// A view of a stored value as floats. RocksDB values are not float-aligned in general, so the
// floats are copied into `scratch`.
std::span<const float> ValueFloats(const rocksdb::Slice& value, std::vector<float>& scratch);

// What RowWrites::LogPayload holds: its puts and deletions, each an op byte, then
//   rows:       family id (u32) | partition (u32) | key (u64) [| bytes (u32) | row and state]
//   partitions: family id (u32) | partition (u32)
//   records:    key bytes (u32) | key [| value bytes (u32) | value]
// little-endian, decoded with bounds checks (a replayed log is outside input).
enum class LogOp : uint8_t { kPutRow = 1, kDeleteRow, kDeletePartition, kPutRecord, kDeleteRecord };

template <typename T>
void AppendPlain(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

inline void AppendBytes(std::string& out, std::string_view bytes) {
  AppendPlain(out, static_cast<uint32_t>(bytes.size()));
  out.append(bytes);
}

struct LoggedEntry {
  LogOp op;
  uint32_t family = 0;
  uint32_t partition = 0;
  uint64_t key = 0;
  std::string_view record_key;
  std::string_view value;  // a row with its state, or a record's value
};

// Calls visit(entry) for each entry of a logged batch; DataLoss at the first malformed one.
Status ForEachLoggedEntry(std::string_view payload,
                          const std::function<Status(const LoggedEntry&)>& visit);

// Where the rows of a column family id go: its handle, and the row width a put must have (0: any).
struct RowFamily {
  rocksdb::ColumnFamilyHandle* handle;
  uint32_t floats_per_row;
};

// The error for logged rows of a column family that holds no table of the store.
Status NoSuchFamily(uint32_t id);

// Adds the entries of an encoded batch (RowWrites::LogPayload) to `batch`: rows to the family
// `family_of(id)` gives (DataLoss naming the id when none), records to `records`.
Status ToWriteBatch(std::string_view payload,
                    const std::function<const RowFamily*(uint32_t id)>& family_of,
                    rocksdb::ColumnFamilyHandle* records, rocksdb::WriteBatch& batch);

// Writes an encoded batch atomically to `db` through `batch` (cleared first): its rows to
// `rows`, its records to `records`; `sync` fsyncs RocksDB's log before returning.
Status WriteAndClear(rocksdb::DB* db, std::string_view payload, bool sync,
                     rocksdb::ColumnFamilyHandle* rows, rocksdb::ColumnFamilyHandle* records,
                     rocksdb::WriteBatch& batch);

// Visits the records of `family` whose key starts with `prefix`, in key order.
Status ForEachRecordIn(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family,
                       std::string_view prefix,
                       const std::function<void(std::string_view, std::string_view)>& visit);

}  // namespace ember::embedding::rocks_format
