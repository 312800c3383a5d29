// ReplayFolder implementation (see replay_folder.h).
#include "embedding/replay_folder.h"

#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

namespace ember::embedding {

using rocks_format::AsSlice;
using rocks_format::CheckValueSize;
using rocks_format::EncodedKey;
using rocks_format::EncodeKey;
using rocks_format::EncodePartition;
using rocks_format::FromRocks;
using rocks_format::LoggedEntry;
using rocks_format::LogOp;
using rocks_format::NoSuchFamily;
using rocks_format::RowFamily;

rocksdb::WriteOptions ReplayFolder::WithoutLog() {
  rocksdb::WriteOptions options;
  options.disableWAL = true;
  return options;
}

Status ReplayFolder::MaybeDrain() {
  const size_t pending = pending_row_bytes_ + record_bytes_ + records_.size() * kEntryOverhead;
  return pending > kMaxPendingBytes ? Drain() : Status::Ok();
}

Status ReplayFolder::Add(const LoggedEntry& entry) {
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

Status ReplayFolder::Drain() {
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

}  // namespace ember::embedding
