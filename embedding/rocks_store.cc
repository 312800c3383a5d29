// RocksStore implementation: row batches, a table's column family, and the store's database
// with its push log (the encodings are in rocks_format.h, the replay in replay_folder.h).
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
#include "embedding/replay_folder.h"
#include "embedding/rocks_format.h"

namespace ember::embedding {

using rocks_format::AppendBytes;
using rocks_format::AppendPlain;
using rocks_format::AsSlice;
using rocks_format::CheckValueSize;
using rocks_format::DecodeFeatureKey;
using rocks_format::EncodedKey;
using rocks_format::EncodeKey;
using rocks_format::EncodePartition;
using rocks_format::ForEachLoggedEntry;
using rocks_format::ForEachRecordIn;
using rocks_format::FromRocks;
using rocks_format::kKeyBytes;
using rocks_format::LoggedEntry;
using rocks_format::LogOp;
using rocks_format::RowFamily;
using rocks_format::ValueFloats;
using rocks_format::WriteAndClear;

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
    const uint64_t feature = DecodeFeatureKey(key.data());
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
  replayed_log_writes_ = folder.entries();
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
