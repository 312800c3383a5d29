// RocksStore implementation: key encoding, column families, and RocksDB status translation.
#include "embedding/rocks_store.h"

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <tuple>
#include <unordered_map>

#include "common/check.h"
#include "embedding/row_store.h"

namespace ember::embedding {
namespace {

constexpr size_t kKeyBytes = 12;
using EncodedKey = std::array<char, kKeyBytes>;

void StoreBigEndian(uint64_t value, int bytes, char* out) {
  for (int i = bytes - 1; i >= 0; --i) {
    out[i] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
}

uint64_t LoadBigEndian(const char* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value = (value << 8) | static_cast<unsigned char>(in[i]);
  return value;
}

EncodedKey EncodeKey(uint32_t partition, uint64_t key) {
  EncodedKey encoded;
  StoreBigEndian(partition, 4, encoded.data());
  StoreBigEndian(key, 8, encoded.data() + 4);
  return encoded;
}

std::array<char, 4> EncodePartition(uint32_t partition) {
  std::array<char, 4> encoded;
  StoreBigEndian(partition, 4, encoded.data());
  return encoded;
}

rocksdb::Slice AsSlice(const EncodedKey& key) { return rocksdb::Slice(key.data(), key.size()); }
rocksdb::Slice AsSlice(std::string_view bytes) { return rocksdb::Slice(bytes.data(), bytes.size()); }

Status FromRocks(const rocksdb::Status& status, const std::string& what) {
  if (status.ok()) return Status::Ok();
  if (status.IsCorruption()) return DataLoss(what + ": " + status.ToString());
  return Unavailable(what + ": " + status.ToString());
}

Status CheckValueSize(size_t bytes, uint32_t floats_per_row, uint64_t key) {
  if (bytes == size_t{floats_per_row} * sizeof(float)) return Status::Ok();
  return DataLoss("stored row of key " + std::to_string(key) + " has " + std::to_string(bytes) +
                  " bytes, want " + std::to_string(floats_per_row * sizeof(float)));
}

// A view of a stored value as floats. RocksDB values are not float-aligned in general, so the
// floats are copied into `scratch`.
std::span<const float> ValueFloats(const rocksdb::Slice& value, std::vector<float>& scratch) {
  scratch.resize(value.size() / sizeof(float));
  std::memcpy(scratch.data(), value.data(), scratch.size() * sizeof(float));
  return scratch;
}

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

void AppendBytes(std::string& out, std::string_view bytes) {
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

class LogReader {
 public:
  explicit LogReader(std::string_view in) : in_(in) {}
  bool done() const { return in_.empty(); }
  template <typename T>
  bool Read(T* value) {
    if (in_.size() < sizeof(T)) return false;
    std::memcpy(value, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return true;
  }
  bool ReadBytes(std::string_view* bytes) {
    uint32_t size;
    if (!Read(&size) || in_.size() < size) return false;
    *bytes = in_.substr(0, size);
    in_.remove_prefix(size);
    return true;
  }

 private:
  std::string_view in_;
};

// Calls visit(entry) for each entry of a logged batch; DataLoss at the first malformed one.
Status ForEachLoggedEntry(std::string_view payload,
                          const std::function<Status(const LoggedEntry&)>& visit) {
  LogReader reader(payload);
  while (!reader.done()) {
    LoggedEntry entry;
    uint8_t op = 0;
    bool ok = reader.Read(&op);
    entry.op = static_cast<LogOp>(op);
    switch (entry.op) {
      case LogOp::kPutRow:
      case LogOp::kDeleteRow:
        ok = ok && reader.Read(&entry.family) && reader.Read(&entry.partition) &&
             reader.Read(&entry.key) &&
             (entry.op == LogOp::kDeleteRow || reader.ReadBytes(&entry.value));
        break;
      case LogOp::kDeletePartition:
        ok = ok && reader.Read(&entry.family) && reader.Read(&entry.partition);
        break;
      case LogOp::kPutRecord:
      case LogOp::kDeleteRecord:
        ok = ok && reader.ReadBytes(&entry.record_key) &&
             (entry.op == LogOp::kDeleteRecord || reader.ReadBytes(&entry.value));
        break;
      default:
        ok = false;
    }
    if (!ok) return DataLoss("a malformed entry in a logged batch");
    RETURN_IF_ERROR(visit(entry));
  }
  return Status::Ok();
}

// Visits the records of `family` whose key starts with `prefix`, in key order.
Status ForEachRecordIn(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family,
                       std::string_view prefix,
                       const std::function<void(std::string_view, std::string_view)>& visit) {
  rocksdb::ReadOptions options;
  options.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(options, family));
  const rocksdb::Slice start(prefix.data(), prefix.size());
  for (it->Seek(start); it->Valid() && it->key().starts_with(start); it->Next()) {
    visit(std::string_view(it->key().data(), it->key().size()),
          std::string_view(it->value().data(), it->value().size()));
  }
  return FromRocks(it->status(), "reading records");
}

// Where the rows of a column family id go: its handle, and the row width a put must have (0: any).
struct RowFamily {
  rocksdb::ColumnFamilyHandle* handle;
  uint32_t floats_per_row;
};

// The error for logged rows of a column family that holds no table of the store.
Status NoSuchFamily(uint32_t id) {
  return DataLoss("rows of column family " + std::to_string(id) +
                  ", which holds no table of this store");
}

// Adds the entries of an encoded batch (RowWrites::LogPayload) to `batch`: rows to the family
// `family_of(id)` gives (DataLoss naming the id when none), records to `records`.
Status ToWriteBatch(std::string_view payload,
                    const std::function<const RowFamily*(uint32_t id)>& family_of,
                    rocksdb::ColumnFamilyHandle* records, rocksdb::WriteBatch& batch) {
  return ForEachLoggedEntry(payload, [&](const LoggedEntry& entry) -> Status {
    if (entry.op == LogOp::kPutRecord) {
      return FromRocks(batch.Put(records, AsSlice(entry.record_key), AsSlice(entry.value)), "");
    }
    if (entry.op == LogOp::kDeleteRecord) {
      return FromRocks(batch.Delete(records, AsSlice(entry.record_key)), "");
    }
    const RowFamily* family = family_of(entry.family);
    if (family == nullptr) return NoSuchFamily(entry.family);
    const EncodedKey key = EncodeKey(entry.partition, entry.key);
    switch (entry.op) {
      case LogOp::kPutRow:
        if (family->floats_per_row != 0) {
          RETURN_IF_ERROR(CheckValueSize(entry.value.size(), family->floats_per_row, entry.key));
        }
        return FromRocks(batch.Put(family->handle, AsSlice(key), AsSlice(entry.value)), "");
      case LogOp::kDeleteRow:
        return FromRocks(batch.Delete(family->handle, AsSlice(key)), "");
      default: {
        // Every 12-byte key of the partition sorts below the 4-byte prefix of the next one.
        const auto begin = EncodeKey(entry.partition, 0);
        const auto end = EncodePartition(entry.partition + 1);
        return FromRocks(batch.DeleteRange(family->handle, AsSlice(begin),
                                           rocksdb::Slice(end.data(), end.size())),
                         "");
      }
    }
  });
}

// Folds the entries of a replayed push log into the last write of each row and record before they
// reach RocksDB: a hot row pushed a thousand times between two retirements is written once, not a
// thousand times, and rows go in key order (RocksDB's memtable inserts a run of ordered keys far
// faster than scattered ones). Its writes skip RocksDB's own log: the replay flushes the memtables
// before the segments go, and a replay cut short by a kill starts over from the segments, which
// hold absolute values, so replaying twice ends as replaying once. A partition deletion first
// writes what is pending, so each row's writes keep their order around it. What is pending is
// bounded (kMaxPendingBytes, then written out).
class ReplayFolder {
 public:
  using FamilyOf = std::function<const RowFamily*(uint32_t id)>;
  ReplayFolder(rocksdb::DB* db, FamilyOf family_of, rocksdb::ColumnFamilyHandle* records)
      : db_(db), family_of_(std::move(family_of)), records_family_(records) {}

  // Takes one replayed entry; DataLoss for rows of an unknown family or of the wrong width.
  Status Add(const LoggedEntry& entry) {
    ++entries_;
    if (entry.op == LogOp::kPutRecord || entry.op == LogOp::kDeleteRecord) {
      auto [it, inserted] = records_.try_emplace(std::string(entry.record_key));
      LastRecordWrite& last = it->second;
      record_bytes_ += (inserted ? entry.record_key.size() : 0) - last.value.size();
      last.deleted = entry.op == LogOp::kDeleteRecord;
      last.value.assign(last.deleted ? std::string_view() : entry.value);
      record_bytes_ += last.value.size();
      return MaybeDrain();
    }
    const RowFamily* family = family_of_(entry.family);
    if (family == nullptr) return NoSuchFamily(entry.family);
    if (entry.op == LogOp::kDeletePartition) {
      RETURN_IF_ERROR(Drain());
      const auto begin = EncodeKey(entry.partition, 0);
      const auto end = EncodePartition(entry.partition + 1);
      rocksdb::WriteBatch batch;
      RETURN_IF_ERROR(FromRocks(batch.DeleteRange(family->handle, AsSlice(begin),
                                                  rocksdb::Slice(end.data(), end.size())),
                                ""));
      return FromRocks(db_->Write(WithoutLog(), &batch), "deleting a replayed partition");
    }
    if (entry.op == LogOp::kPutRow) {
      RETURN_IF_ERROR(CheckValueSize(entry.value.size(), family->floats_per_row, entry.key));
    }
    // A pending row: the row and its state, then a float that is 1 for a deletion.
    const uint64_t slot = PartitionSlot(entry.family, entry.partition);
    if (last_rows_ == nullptr || slot != last_slot_) {  // a batch's rows come partition by partition
      last_slot_ = slot;
      last_rows_ = &pending_rows_.try_emplace(slot, family->floats_per_row + 1).first->second;
    }
    auto [row, inserted] = last_rows_->FindOrInsert(entry.key);
    if (entry.op == LogOp::kDeleteRow) {
      row[family->floats_per_row] = 1.0f;
    } else {
      std::memcpy(row, entry.value.data(), entry.value.size());
      row[family->floats_per_row] = 0.0f;
    }
    if (inserted) {
      ++pending_row_count_;
      pending_row_bytes_ += (family->floats_per_row + 1) * sizeof(float) + kRowIndexOverhead;
    }
    return MaybeDrain();
  }

  // Writes every pending row (in key order) and record.
  Status Drain() {
    rocksdb::WriteBatch batch;
    const auto write_if = [&](size_t at_least) -> Status {
      if (batch.Count() == 0 || batch.GetDataSize() < at_least) return Status::Ok();
      Status written = FromRocks(db_->Write(WithoutLog(), &batch), "writing replayed rows");
      batch.Clear();
      return written;
    };
    std::vector<std::pair<uint64_t, const float*>> rows;
    for (const auto& [slot, pending] : pending_rows_) {  // in key order: family, partition, key
      const RowFamily* family = family_of_(static_cast<uint32_t>(slot >> 32));
      const uint32_t partition = static_cast<uint32_t>(slot);
      rows.clear();
      pending.ForEach([&](uint64_t key, const float* row) { rows.emplace_back(key, row); });
      std::sort(rows.begin(), rows.end());
      for (const auto& [key, row] : rows) {
        const EncodedKey encoded = EncodeKey(partition, key);
        const rocksdb::Slice value(reinterpret_cast<const char*>(row),
                                   size_t{family->floats_per_row} * sizeof(float));
        RETURN_IF_ERROR(FromRocks(row[family->floats_per_row] != 0.0f
                                      ? batch.Delete(family->handle, AsSlice(encoded))
                                      : batch.Put(family->handle, AsSlice(encoded), value),
                                  ""));
        RETURN_IF_ERROR(write_if(kBatchBytes));
      }
    }
    for (const auto& [key, last] : records_) {
      RETURN_IF_ERROR(FromRocks(last.deleted ? batch.Delete(records_family_, AsSlice(key))
                                             : batch.Put(records_family_, AsSlice(key),
                                                         AsSlice(last.value)),
                                ""));
      RETURN_IF_ERROR(write_if(kBatchBytes));
    }
    RETURN_IF_ERROR(write_if(0));
    written_ += pending_row_count_ + records_.size();
    pending_rows_.clear();
    last_rows_ = nullptr;
    pending_row_count_ = 0;
    pending_row_bytes_ = 0;
    records_.clear();
    record_bytes_ = 0;
    return Status::Ok();
  }

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

  static rocksdb::WriteOptions WithoutLog() {
    rocksdb::WriteOptions options;
    options.disableWAL = true;
    return options;
  }

  Status MaybeDrain() {
    const size_t pending = pending_row_bytes_ + record_bytes_ + records_.size() * kEntryOverhead;
    return pending > kMaxPendingBytes ? Drain() : Status::Ok();
  }

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

// Writes `writes` atomically to `db` and clears it: its entries, kept in the encoding the push
// log takes as it is, become one RocksDB batch here.
Status WriteAndClear(rocksdb::DB* db, std::string_view payload, bool sync,
                     rocksdb::ColumnFamilyHandle* rows, rocksdb::ColumnFamilyHandle* records,
                     rocksdb::WriteBatch& batch) {
  batch.Clear();
  const RowFamily family{rows, 0};
  RETURN_IF_ERROR(ToWriteBatch(
      payload,
      [&](uint32_t id) { return rows != nullptr && id == rows->GetID() ? &family : nullptr; },
      records, batch));
  rocksdb::WriteOptions options;
  options.sync = sync;
  return FromRocks(db->Write(options, &batch), "writing rows");
}

}  // namespace

RowWrites::RowWrites(const RocksTable& table)
    : batch_(std::make_unique<rocksdb::WriteBatch>()),
      family_(table.family_),
      record_family_(table.records_),
      floats_per_row_(table.floats_per_row()) {}
RowWrites::RowWrites(const RocksStore& store)
    : batch_(std::make_unique<rocksdb::WriteBatch>()),
      family_(nullptr),
      record_family_(store.record_family()) {}
RowWrites::~RowWrites() = default;
RowWrites::RowWrites(RowWrites&&) noexcept = default;
RowWrites& RowWrites::operator=(RowWrites&&) noexcept = default;

void RowWrites::ReserveRows(size_t rows) {
  EMBER_CHECK(family_ != nullptr, "a batch of records only reserved rows");
  const size_t row_bytes = 1 + sizeof(uint32_t) + sizeof(uint32_t) + sizeof(uint64_t) +
                           sizeof(uint32_t) + size_t{floats_per_row_} * sizeof(float);
  log_.reserve(log_.size() + rows * row_bytes);
}

void RowWrites::Put(uint32_t partition, uint64_t key, std::span<const float> row_and_state) {
  EMBER_CHECK(family_ != nullptr, "a batch of records only got a row");
  log_.push_back(static_cast<char>(LogOp::kPutRow));
  AppendPlain(log_, family_->GetID());
  AppendPlain(log_, partition);
  AppendPlain(log_, key);
  AppendBytes(log_, std::string_view(reinterpret_cast<const char*>(row_and_state.data()),
                                     row_and_state.size_bytes()));
  ++rows_;
}

void RowWrites::Delete(uint32_t partition, uint64_t key) {
  EMBER_CHECK(family_ != nullptr, "a batch of records only got a row deletion");
  log_.push_back(static_cast<char>(LogOp::kDeleteRow));
  AppendPlain(log_, family_->GetID());
  AppendPlain(log_, partition);
  AppendPlain(log_, key);
  ++rows_;
}

void RowWrites::DeletePartition(uint32_t partition) {
  EMBER_CHECK(family_ != nullptr, "a batch of records only got a partition deletion");
  log_.push_back(static_cast<char>(LogOp::kDeletePartition));
  AppendPlain(log_, family_->GetID());
  AppendPlain(log_, partition);
  ++rows_;
}

std::string_view RowWrites::LogPayload() const { return log_; }

PushLog::Ticket RowWrites::AppendToLog(PushLog& log, PushLog::Origin origin) const {
  return log.Append(std::string_view(log_), origin, std::string_view(kept_));
}

PushLog::Ticket RowWrites::MoveToLog(PushLog& log, PushLog::Origin origin) {
  const PushLog::Ticket ticket = log.Append(std::move(log_), origin, std::move(kept_));
  Clear();
  return ticket;
}

void RowWrites::PutRecord(std::string_view key, std::string_view value) {
  for (std::string* out : {&log_, &kept_}) {
    out->push_back(static_cast<char>(LogOp::kPutRecord));
    AppendBytes(*out, key);
    AppendBytes(*out, value);
  }
  ++records_;
}

void RowWrites::DeleteRecord(std::string_view key) {
  for (std::string* out : {&log_, &kept_}) {
    out->push_back(static_cast<char>(LogOp::kDeleteRecord));
    AppendBytes(*out, key);
  }
  ++records_;
}

void RowWrites::Clear() {
  log_.clear();
  kept_.clear();
  rows_ = 0;
  records_ = 0;
}

RocksTable::RocksTable(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family,
                       rocksdb::ColumnFamilyHandle* records, uint32_t floats_per_row,
                       PushLog* push_log)
    : db_(db),
      family_(family),
      records_(records),
      floats_per_row_(floats_per_row),
      push_log_(push_log) {}

Status RocksTable::MultiGet(std::span<const uint32_t> partitions, std::span<const uint64_t> keys,
                            const std::function<void(size_t, std::span<const float>)>& found) const {
  const size_t n = keys.size();
  if (n == 0) return Status::Ok();
  thread_local std::vector<EncodedKey> encoded;
  thread_local std::vector<rocksdb::Slice> slices;
  thread_local std::vector<rocksdb::Status> statuses;
  thread_local std::vector<float> scratch;
  encoded.resize(n);
  slices.resize(n);
  statuses.resize(n);
  // Not reused across calls: a pinned value holds blocks of the database until it is destroyed.
  std::vector<rocksdb::PinnableSlice> values(n);
  for (size_t i = 0; i < n; ++i) {
    encoded[i] = EncodeKey(partitions[i], keys[i]);
    slices[i] = AsSlice(encoded[i]);
  }
  db_->MultiGet(rocksdb::ReadOptions(), family_, n, slices.data(), values.data(), statuses.data(),
                /*sorted_input=*/false);
  for (size_t i = 0; i < n; ++i) {
    if (statuses[i].IsNotFound()) continue;
    RETURN_IF_ERROR(FromRocks(statuses[i], "reading a cold row"));
    RETURN_IF_ERROR(CheckValueSize(values[i].size(), floats_per_row_, keys[i]));
    found(i, ValueFloats(values[i], scratch));
  }
  return Status::Ok();
}

Status RocksTable::Write(RowWrites& writes) {
  if (writes.empty()) return Status::Ok();
  Status written = WriteAndClear(db_, writes.LogPayload(), writes.sync, writes.family_,
                                 writes.record_family_, *writes.batch_);
  writes.Clear();
  return written;
}

Status RocksTable::ForEachInPartition(uint32_t partition, const RowVisitor& visit) const {
  const auto prefix = EncodePartition(partition);
  const auto next = EncodePartition(partition + 1);
  rocksdb::ReadOptions options;
  const rocksdb::Slice upper(next.data(), next.size());
  if (partition != UINT32_MAX) options.iterate_upper_bound = &upper;
  options.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options, family_));
  std::vector<float> scratch;
  for (it->Seek(rocksdb::Slice(prefix.data(), prefix.size())); it->Valid(); it->Next()) {
    const rocksdb::Slice key = it->key();
    if (key.size() != kKeyBytes) return DataLoss("stored row key of " + std::to_string(key.size()) + " bytes");
    const uint64_t feature = LoadBigEndian(key.data() + 4, 8);
    RETURN_IF_ERROR(CheckValueSize(it->value().size(), floats_per_row_, feature));
    visit(feature, ValueFloats(it->value(), scratch));
  }
  return FromRocks(it->status(), "scanning partition " + std::to_string(partition));
}

Result<uint64_t> RocksTable::CountRowsInPartition(uint32_t partition) const {
  uint64_t count = 0;
  RETURN_IF_ERROR(ForEachInPartition(partition, [&](uint64_t, std::span<const float>) { ++count; }));
  return count;
}

Status RocksTable::ForEachRecord(
    std::string_view prefix,
    const std::function<void(std::string_view key, std::string_view value)>& visit) const {
  return ForEachRecordIn(db_, records_, prefix, visit);
}

Result<uint64_t> RocksTable::CountRows() const {
  rocksdb::ReadOptions options;
  options.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options, family_));
  uint64_t count = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++count;
  RETURN_IF_ERROR(FromRocks(it->status(), "counting stored rows"));
  return count;
}

uint64_t RocksTable::DiskBytes() const {
  uint64_t bytes = 0;
  db_->GetIntProperty(family_, "rocksdb.total-sst-files-size", &bytes);
  return bytes;
}

Result<std::unique_ptr<RocksStore>> RocksStore::Open(const RocksStoreOptions& options,
                                                     const std::map<std::string, uint32_t>& tables) {
  std::error_code error;
  std::filesystem::create_directories(options.path, error);
  if (error) {
    return Unavailable("cannot create data directory '" + options.path + "': " + error.message());
  }
  rocksdb::Options db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.IncreaseParallelism(2);
  rocksdb::ColumnFamilyOptions family_options;
  family_options.OptimizeForPointLookup(options.block_cache_bytes >> 20);
  rocksdb::BlockBasedTableOptions table_options;
  table_options.block_cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  // A cold read probes every level it may be in: a Bloom filter per file rules most out.
  table_options.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table_options.data_block_index_type = rocksdb::BlockBasedTableOptions::kDataBlockBinaryAndHash;
  family_options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table_options));
  // Rows are random floats: compression would cost CPU for nothing.
  family_options.compression = rocksdb::kNoCompression;

  std::vector<std::string> existing;
  if (!rocksdb::DB::ListColumnFamilies(db_options, options.path, &existing).ok()) existing.clear();
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  descriptors.emplace_back(rocksdb::kDefaultColumnFamilyName, family_options);
  for (const std::string& name : existing) {
    if (name != rocksdb::kDefaultColumnFamilyName && !tables.count(name)) {
      descriptors.emplace_back(name, family_options);
    }
  }
  for (const auto& [name, floats] : tables) {
    if (name == rocksdb::kDefaultColumnFamilyName) {
      return InvalidArgument("table name '" + name + "' is reserved by the data directory");
    }
    descriptors.emplace_back(name, family_options);
  }
  std::unique_ptr<RocksStore> store(new RocksStore());
  store->path_ = options.path;
  rocksdb::DB* db = nullptr;
  RETURN_IF_ERROR(FromRocks(rocksdb::DB::Open(db_options, options.path, descriptors,
                                              &store->handles_, &db),
                            "opening data directory '" + options.path + "'"));
  store->db_.reset(db);
  store->sync_log_ = options.sync_log;
  const std::string log_dir =
      (std::filesystem::path(options.path) / "ember-pushlog").string();
  ASSIGN_OR_RETURN(uint64_t next_segment, store->ReplayPushLog(log_dir, tables));
  if (options.log_pushes) {
    PushLogOptions log_options{log_dir, options.sync_log, options.log_segment_bytes,
                               options.log_kept_bytes_limit};
    ASSIGN_OR_RETURN(store->push_log_,
                     PushLog::Create(log_options, next_segment,
                                     [raw = store.get()](const std::vector<RetiredSegment>& done) {
                                       return raw->PersistLoggedRecords(done);
                                     }));
  }
  for (size_t i = 0; i < descriptors.size(); ++i) {
    auto it = tables.find(descriptors[i].name);
    if (it == tables.end()) continue;
    store->tables_.emplace(
        it->first, std::make_unique<RocksTable>(db, store->handles_[i], store->record_family(),
                                                it->second, store->push_log_.get()));
  }
  return store;
}

Result<uint64_t> RocksStore::ReplayPushLog(const std::string& dir,
                                           const std::map<std::string, uint32_t>& tables) {
  std::map<uint32_t, RowFamily> families;
  for (rocksdb::ColumnFamilyHandle* handle : handles_) {
    auto it = tables.find(handle->GetName());
    if (it != tables.end()) families[handle->GetID()] = {handle, it->second};
  }
  const auto family_of = [&](uint32_t id) -> const RowFamily* {
    auto it = families.find(id);
    return it == families.end() ? nullptr : &it->second;
  };
  const auto started = std::chrono::steady_clock::now();
  ReplayFolder folder(db_.get(), family_of, record_family());
  const std::string what = "replaying the push log of '" + path_ + "'";
  uint64_t replayed = 0;
  ASSIGN_OR_RETURN(uint64_t next, PushLog::Replay(dir, [&](std::string_view payload) {
    ++replayed;
    return ForEachLoggedEntry(payload, [&](const LoggedEntry& entry) { return folder.Add(entry); })
        .WithContext(what);
  }));
  if (replayed == 0) return next;
  RETURN_IF_ERROR(folder.Drain().WithContext(what));
  // The replayed rows, written without RocksDB's log, must be in files before the segments go.
  RETURN_IF_ERROR(Flush());
  RETURN_IF_ERROR(PushLog::RemoveSegments(dir));
  spdlog::info("push log of '{}': {} records replayed, {} writes folded into {}, in {:.2f} s",
               path_, replayed, folder.entries(), folder.written(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return next;
}

Status RocksStore::PersistLoggedRecords(const std::vector<RetiredSegment>& segments) {
  rocksdb::WriteBatch records;
  // Only the records: the tables logged their rows again, or wrote them to RocksDB.
  const auto add_records = [&](std::string_view payload) {
    return ForEachLoggedEntry(payload, [&](const LoggedEntry& entry) {
      if (entry.op == LogOp::kPutRecord) {
        return FromRocks(records.Put(record_family(), AsSlice(entry.record_key),
                                     AsSlice(entry.value)), "");
      }
      if (entry.op == LogOp::kDeleteRecord) {
        return FromRocks(records.Delete(record_family(), AsSlice(entry.record_key)), "");
      }
      return Status::Ok();
    });
  };
  for (const RetiredSegment& segment : segments) {
    const std::string what = "the records of push log '" + segment.path + "'";
    if (segment.kept_complete) {
      RETURN_IF_ERROR(add_records(segment.kept).WithContext(what));
    } else {
      RETURN_IF_ERROR(PushLog::ReadSegment(segment.path, [&](std::string_view payload) {
        return add_records(payload).WithContext(what);
      }));
    }
  }
  rocksdb::WriteOptions options;
  options.sync = sync_log_;
  if (records.Count() > 0) {
    RETURN_IF_ERROR(FromRocks(db_->Write(options, &records), "writing logged records"));
  }
  // Rows written back on eviction went through RocksDB's own log: make it as durable as the push
  // log.
  if (sync_log_) RETURN_IF_ERROR(FromRocks(db_->SyncWAL(), "syncing '" + path_ + "'"));
  return Status::Ok();
}

RocksStore::~RocksStore() {
  push_log_.reset();
  tables_.clear();
  for (rocksdb::ColumnFamilyHandle* handle : handles_) {
    if (db_) (void)db_->DestroyColumnFamilyHandle(handle);
  }
  if (db_) (void)db_->Close();
}

RocksTable* RocksStore::Table(std::string_view name) {
  auto it = tables_.find(name);
  return it == tables_.end() ? nullptr : it->second.get();
}

Status RocksStore::Flush() {
  rocksdb::FlushOptions options;
  return FromRocks(db_->Flush(options, handles_), "flushing '" + path_ + "'");
}

Status RocksStore::ForEachRecord(
    std::string_view prefix,
    const std::function<void(std::string_view key, std::string_view value)>& visit) const {
  return ForEachRecordIn(db_.get(), record_family(), prefix, visit)
      .WithContext("reading records of '" + path_ + "'");
}

Status RocksStore::Write(RowWrites& writes) {
  if (writes.empty()) return Status::Ok();
  Status written = WriteAndClear(db_.get(), writes.LogPayload(), writes.sync, writes.family_,
                                 writes.record_family_, *writes.batch_);
  writes.Clear();
  return written;
}

}  // namespace ember::embedding
