// The RocksDB tier's encodings (see rocks_format.h).
#include "embedding/rocks_format.h"

#include <cstring>

namespace ember::embedding::rocks_format {
namespace {

void StoreBigEndian(uint64_t value, int bytes, char* out) {
  for (int i = bytes - 1; i >= 0; --i) {
    out[i] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
}

}  // namespace

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

uint64_t DecodeFeatureKey(const char* encoded) {
  uint64_t value = 0;
  for (int i = 4; i < 12; ++i) value = (value << 8) | static_cast<unsigned char>(encoded[i]);
  return value;
}

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

std::span<const float> ValueFloats(const rocksdb::Slice& value, std::vector<float>& scratch) {
  scratch.resize(value.size() / sizeof(float));
  std::memcpy(scratch.data(), value.data(), scratch.size() * sizeof(float));
  return scratch;
}

namespace {

// Reads a logged batch with bounds checks.
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

}  // namespace

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

Status NoSuchFamily(uint32_t id) {
  return DataLoss("rows of column family " + std::to_string(id) +
                  ", which holds no table of this store");
}

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

}  // namespace ember::embedding::rocks_format
