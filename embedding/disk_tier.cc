// DiskTier: opening a tier, its durable row counts, and the operations on whole partitions and
// single rows (restore, erase, expiry, reads).
#include "embedding/disk_tier.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "embedding/tier_row_flags.h"

namespace ember::embedding {
namespace {

// "rows/", the table id and the partition, big-endian.
std::string CountRecordPrefix(uint64_t table_id) {
  std::string key = "rows/";
  for (int shift = 56; shift >= 0; shift -= 8) key.push_back(static_cast<char>(table_id >> shift));
  return key;
}

// Keys written to disk a stripe remembers for the prefetches in flight; past it, a new generation
// begins (and prefetches that read the stripe before drop what they read of it).
constexpr size_t kMaxWrittenKeys = 8192;

}  // namespace

DiskTier::DiskTier(const TierOptions& options, TierTable table)
    : table_(table),
      disk_(*options.disk),
      budget_(options.budget),
      row_bytes_(uint64_t{table.rows.row_floats()} * sizeof(float)),
      clocks_(table.rows.num_partitions()),
      durable_rows_(table.rows.num_partitions(), 0),
      write_notes_(table.rows.num_stripes()),
      pins_(std::make_unique<HintPins>(options.pin_budget_bytes, row_bytes_, table.counters)),
      changed_cold_(table.rows.num_partitions()) {}

Result<std::unique_ptr<DiskTier>> DiskTier::Open(const TierOptions& options, TierTable table) {
  if (options.disk->floats_per_row() != table.floats_per_row) {
    return InvalidArgument("table '" + table.name + "': disk rows of " +
                           std::to_string(options.disk->floats_per_row()) + " floats, want " +
                           std::to_string(table.floats_per_row));
  }
  std::unique_ptr<DiskTier> tier(new DiskTier(options, table));
  if (options.budget != nullptr && options.cold_file_bytes > 0 && !options.cold_file_dir.empty()) {
    ASSIGN_OR_RETURN(tier->cold_,
                     ColdRowFile::Create(options.cold_file_dir, table.floats_per_row + 1,
                                         table.rows.num_partitions(), options.cold_file_bytes));
  }
  ASSIGN_OR_RETURN(const uint64_t stored, tier->LoadDurableCounts());
  table.row_count.store(stored, std::memory_order_relaxed);
  if (PushLog* log = tier->disk_.push_log(); log != nullptr) {
    // Before the log drops a full segment, the changed rows it logged are logged again.
    DiskTier* relogging = tier.get();
    tier->relogger_ = log->AddRelogger(
        [relogging](uint64_t through) { return relogging->RelogDirtyRows(through); });
  }
  return tier;
}

DiskTier::~DiskTier() {
  if (relogger_ == 0) return;
  const uint32_t flags_float = table_.floats_per_row;
  bool changed_rows_left = false;
  for (uint32_t p = 0; p < table_.rows.num_partitions() && !changed_rows_left; ++p) {
    std::as_const(table_.rows.store(p)).ForEach([&](uint64_t, const float* row) {
      changed_rows_left |= (LoadFlags(row + flags_float) & kDirty) != 0;
    });
  }
  changed_rows_left = changed_rows_left || AnyChangedColdRow();
  disk_.push_log()->RemoveRelogger(relogger_, changed_rows_left);
}

void DiskTier::AddCountRecord(RowWrites& batch, uint32_t partition, uint64_t count) const {
  std::string key = CountRecordPrefix(table_.table_id);
  for (int shift = 24; shift >= 0; shift -= 8) key.push_back(static_cast<char>(partition >> shift));
  batch.PutRecord(key, std::string_view(reinterpret_cast<const char*>(&count), sizeof(count)));
}

bool DiskTier::MarkDurable(uint32_t partition, float* row) {
  float* flags_word = row + table_.floats_per_row;
  const uint32_t flags = LoadFlags(flags_word);
  if (flags & kOnDisk) return false;
  StoreFlags(flags_word, flags | kOnDisk);
  ++durable_rows_[partition];
  return true;
}

Result<uint64_t> DiskTier::LoadDurableCounts() {
  const uint32_t num_partitions = table_.rows.num_partitions();
  const std::string prefix = CountRecordPrefix(table_.table_id);
  bool found = false;
  RETURN_IF_ERROR(disk_.ForEachRecord(prefix, [&](std::string_view key, std::string_view value) {
    if (key.size() != prefix.size() + 4 || value.size() != sizeof(uint64_t)) return;
    uint32_t partition = 0;
    for (size_t i = prefix.size(); i < key.size(); ++i) {
      partition = (partition << 8) | static_cast<unsigned char>(key[i]);
    }
    if (partition >= num_partitions) return;
    std::memcpy(&durable_rows_[partition], value.data(), sizeof(uint64_t));
    found = true;
  }));
  // Written by an ember that did not keep counts (or new): count once, and keep the counts.
  if (!found) return CountDurableRows();
  uint64_t total = 0;
  for (uint64_t count : durable_rows_) total += count;
  return total;
}

Result<uint64_t> DiskTier::CountDurableRows() {
  RowWrites counts(disk_);
  uint64_t total = 0;
  for (uint32_t p = 0; p < table_.rows.num_partitions(); ++p) {
    ASSIGN_OR_RETURN(durable_rows_[p], disk_.CountRowsInPartition(p));
    AddCountRecord(counts, p, durable_rows_[p]);
    total += durable_rows_[p];
  }
  RETURN_IF_ERROR(disk_.Write(counts));
  return total;
}

Status DiskTier::RecountRows() {
  // Rows were written to disk without the table: none the cold row file holds can be trusted.
  // Its changed rows are newer, as changed rows in memory are: written over the rows loaded.
  for (uint32_t p = 0; cold_ != nullptr && p < table_.rows.num_partitions(); ++p) {
    std::lock_guard<std::mutex> lock(table_.rows.LockOf(p));
    RETURN_IF_ERROR(WriteBackChangedColdRowsLocked(p));
    cold_->ForgetPartition(p);
  }
  ASSIGN_OR_RETURN(uint64_t total, CountDurableRows());
  table_.row_count.store(total, std::memory_order_relaxed);
  return Status::Ok();
}

void DiskTier::AddResidentLocked(uint32_t partition, uint64_t key, float* row) {
  clocks_[partition].Add(key, row);
  resident_.fetch_add(1, std::memory_order_relaxed);
  if (budget_ != nullptr) budget_->Charge(row_bytes_);
}

void DiskTier::NoteDiskWrite(uint32_t partition) {
  WriteNotes& notes = write_notes_[table_.rows.StripeOf(partition)];
  ++notes.generation;
  notes.written.clear();
}

void DiskTier::NoteRowWritten(uint32_t partition, uint64_t key) {
  // Read under the stripe lock that a pass takes after BeginNotedPass, before its reads.
  if (passes_in_flight_.load() == 0) return;
  WriteNotes& notes = write_notes_[table_.rows.StripeOf(partition)];
  if (notes.written.size() >= kMaxWrittenKeys) NoteDiskWrite(partition);
  notes.written[key] = ++notes.writes;
}

Status DiskTier::Restore(uint32_t partition, uint64_t key, std::span<const float> row,
                         std::span<const float> state) {
  std::lock_guard<std::mutex> lock(table_.rows.LockOf(partition));
  RowStore& store = table_.rows.store(partition);
  auto [stored, is_new] = store.FindOrInsert(key);
  uint32_t flags = kReferenced | kDirty;
  if (is_new) {
    bool on_disk = false;
    // A partition without durable rows (as after Erase, before a restore loads it) has none to
    // look for.
    if (durable_rows_[partition] > 0) {
      const uint64_t keys[] = {key};
      const uint32_t partitions[] = {partition};
      Status read = ReadStoredRows(
          partitions, keys, [&](size_t, std::span<const float>, uint32_t) { on_disk = true; },
          /*keep=*/false);
      if (!read.ok()) {
        store.Erase(key);
        return read.WithContext("restore into table '" + table_.name + "'");
      }
    }
    if (on_disk)
      flags |= kOnDisk;
    else
      table_.row_count.fetch_add(1, std::memory_order_relaxed);
    AddResidentLocked(partition, key, stored);
  } else {
    flags |= LoadFlags(stored + table_.floats_per_row) & (kOnDisk | (~uint32_t{0} << 16));  // pins
  }
  std::copy(row.begin(), row.end(), stored);
  std::copy(state.begin(), state.end(), stored + table_.dim);
  table_.new_rows.StampUpdate(stored);
  StoreFlags(stored + table_.floats_per_row, flags);
  table_.changes.Note(partition, key);
  if (!OverBudget()) return Status::Ok();
  const uint32_t partitions[] = {partition};
  return EvictWhileOverBudget(partitions, kEvictionsPerInsert);
}

Result<uint64_t> DiskTier::Erase(uint32_t partition) {
  std::lock_guard<std::mutex> lock(table_.rows.LockOf(partition));
  table_.changes.Forget(partition);
  RowWrites erasure(disk_);
  erasure.DeletePartition(partition);
  AddCountRecord(erasure, partition, 0);
  if (PushLog* log = disk_.push_log(); log != nullptr) {
    // A replay of the log must not bring back the rows of the partition it logged before; the
    // erasure is logged first, so that no kill leaves the rows deleted but the log without it.
    RETURN_IF_ERROR(
        log->WaitDurable(erasure.AppendToLog(*log))
            .WithContext("logging the erasure of partition " + std::to_string(partition)));
  }
  NoteDiskWrite(partition);
  if (cold_ != nullptr) cold_->ForgetPartition(partition);
  changed_cold_[partition] = ChangedColdKeys{};
  RETURN_IF_ERROR(
      disk_.Write(erasure).WithContext("erasing partition " + std::to_string(partition)));
  uint64_t erased = durable_rows_[partition];
  durable_rows_[partition] = 0;
  RowStore& store = table_.rows.store(partition);
  std::as_const(store).ForEach([&](uint64_t, const float* row) {
    const uint32_t flags = LoadFlags(row + table_.floats_per_row);
    if (!(flags & kOnDisk)) ++erased;
    if (PinCount(flags) > 0) pins_->ForgetPinnedRow();
  });
  if (budget_ != nullptr) budget_->Release(uint64_t{store.size()} * row_bytes_);
  resident_.fetch_sub(store.size(), std::memory_order_relaxed);
  store.Clear();
  clocks_[partition].Clear();
  table_.row_count.fetch_sub(erased, std::memory_order_relaxed);
  return erased;
}

Result<uint64_t> DiskTier::ExpireOnDiskLocked(
    uint32_t partition, std::span<const uint64_t> victims,
    const std::function<bool(const float* row)>& is_expired) {
  const RowStore& store = table_.rows.store(partition);
  const auto flags_of = [&](uint64_t key) {
    return LoadFlags(store.Find(key) + table_.floats_per_row);
  };
  // The rows only in the cold row file go to RocksDB first, to be judged (and deleted) there: the
  // file forgets the partition below.
  RETURN_IF_ERROR(WriteBackChangedColdRowsLocked(partition));
  // Delete on disk first; memory is dropped only once that succeeded.
  RowWrites deletes(disk_);
  uint64_t durable_expired = 0;
  for (uint64_t key : victims) {
    if (!(flags_of(key) & kOnDisk)) continue;
    deletes.Delete(partition, key);
    ++durable_expired;
  }
  uint64_t disk_only = 0;
  RETURN_IF_ERROR(
      disk_.ForEachInPartition(partition, [&](uint64_t key, std::span<const float> stored) {
        if (store.Find(key) == nullptr && is_expired(stored.data())) {
          deletes.Delete(partition, key);
          table_.changes.Note(partition, key);
          ++disk_only;
        }
      }));
  durable_expired += disk_only;
  if (durable_expired > 0) {
    AddCountRecord(deletes, partition, durable_rows_[partition] - durable_expired);
  }
  if (PushLog* log = disk_.push_log(); log != nullptr && !deletes.empty()) {
    // Logged too, so that a replay of the log does not bring the rows back.
    RETURN_IF_ERROR(
        log->WaitDurable(deletes.AppendToLog(*log)).WithContext("logging expired rows"));
  }
  if (!deletes.empty()) {
    NoteDiskWrite(partition);
    if (cold_ != nullptr) cold_->ForgetPartition(partition);
  }
  RETURN_IF_ERROR(disk_.Write(deletes).WithContext("deleting expired rows"));
  durable_rows_[partition] -= durable_expired;
  for (uint64_t key : victims) {
    if (PinCount(flags_of(key)) > 0) pins_->ForgetPinnedRow();
  }
  if (budget_ != nullptr) budget_->Release(uint64_t{victims.size()} * row_bytes_);
  resident_.fetch_sub(victims.size(), std::memory_order_relaxed);
  return disk_only;
}

void DiskTier::ForgetErasedLocked(uint32_t partition, size_t erased) {
  if (erased == 0) return;
  ClockRing& ring = clocks_[partition];
  ring.Clear();
  table_.rows.store(partition).ForEach([&](uint64_t key, float* row) { ring.Add(key, row); });
}

Status DiskTier::ReadRows(std::span<const uint32_t> partitions, std::span<const uint64_t> keys,
                          const std::function<void(size_t, std::span<const float>)>& found) const {
  return ReadStoredRows(
      partitions, keys, [&](size_t i, std::span<const float> row, uint32_t) { found(i, row); },
      /*keep=*/false);
}

Status DiskTier::ForEachRowOnlyOnDiskLocked(uint32_t partition,
                                            const RocksTable::RowVisitor& visit) const {
  const RowStore& store = table_.rows.store(partition);
  // The changed rows of the cold row file first: RocksDB's versions of them are older.
  std::vector<uint64_t> changed;
  ForEachChangedColdRowLocked(partition, [&](uint64_t key, std::span<const float> row) {
    visit(key, row.first(table_.floats_per_row));
    changed.push_back(key);
  });
  return disk_.ForEachInPartition(partition, [&](uint64_t key, std::span<const float> stored) {
    if (store.Find(key) == nullptr && !std::binary_search(changed.begin(), changed.end(), key)) {
      visit(key, stored);
    }
  });
}

uint64_t DiskTier::PartitionRowsLocked(uint32_t partition) const {
  return std::max<uint64_t>(table_.rows.store(partition).size(), durable_rows_[partition]);
}

TierStats DiskTier::stats() const {
  TierStats stats;
  stats.resident_rows = resident_.load(std::memory_order_relaxed);
  stats.hits = table_.counters.Get(TableStat::kHits);
  stats.misses = table_.counters.Get(TableStat::kMisses);
  stats.loaded = loaded_.load(std::memory_order_relaxed);
  stats.cold_file_hits = cold_hits_.load(std::memory_order_relaxed);
  stats.evictions = table_.counters.Get(TableStat::kEvictions);
  stats.writebacks = writebacks_.load(std::memory_order_relaxed);
  stats.kept_changed = kept_changed_.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace ember::embedding
