// EmbeddingTable, tiered: rows beyond the memory budget live in RocksDB (see embedding_table.h).
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "common/check.h"
#include "embedding/embedding_table.h"
#include "embedding/embedding_table_internal.h"
#include "embedding/initializer.h"

namespace ember::embedding {

using internal::kChosen;
using internal::kDirty;
using internal::kLogged;
using internal::kOnDisk;
using internal::kPrefetchDistance;
using internal::kReferenced;
using internal::LoadFlags;
using internal::LoggedAtMost;
using internal::PrefetchRow;
using internal::StoreFlags;
using internal::WithLogSegment;

namespace {

// Re-logging a table's changed rows waits for what it appended after about this many bytes.
constexpr uint64_t kRelogBytesPerWait = uint64_t{1} << 20;

}  // namespace

EmbeddingTable::~EmbeddingTable() {
  if (tier_ == nullptr || tier_->relogger == 0) return;
  bool changed_rows_left = false;
  for (uint32_t p = 0; p < num_partitions_ && !changed_rows_left; ++p) {
    stores_[p].ForEach([&](uint64_t, float* row) {
      changed_rows_left |= (LoadFlags(row + floats_per_row_) & kDirty) != 0;
    });
  }
  tier_->options.disk->push_log()->RemoveRelogger(tier_->relogger, changed_rows_left);
}

Result<std::unique_ptr<EmbeddingTable>> EmbeddingTable::Create(const TableSpec& spec,
                                                               uint32_t num_partitions,
                                                               const TierOptions& tier) {
  if (tier.disk == nullptr) return std::make_unique<EmbeddingTable>(spec, num_partitions);
  std::unique_ptr<EmbeddingTable> table(new EmbeddingTable(spec, num_partitions, &tier));
  if (tier.disk->floats_per_row() != table->floats_per_row_) {
    return InvalidArgument("table '" + spec.name + "': disk rows of " +
                           std::to_string(tier.disk->floats_per_row()) + " floats, want " +
                           std::to_string(table->floats_per_row_));
  }
  ASSIGN_OR_RETURN(uint64_t stored, table->LoadDurableCounts());
  table->rows_.store(stored, std::memory_order_relaxed);
  return table;
}

namespace {

// "rows/", the table id and the partition, big-endian.
std::string CountRecordPrefix(uint64_t table_id) {
  std::string key = "rows/";
  for (int shift = 56; shift >= 0; shift -= 8) key.push_back(static_cast<char>(table_id >> shift));
  return key;
}

}  // namespace

void EmbeddingTable::AddCountRecord(RowWrites& batch, uint32_t partition, uint64_t count) const {
  std::string key = CountRecordPrefix(table_id_);
  for (int shift = 24; shift >= 0; shift -= 8) key.push_back(static_cast<char>(partition >> shift));
  batch.PutRecord(key, std::string_view(reinterpret_cast<const char*>(&count), sizeof(count)));
}

bool EmbeddingTable::MarkDurable(uint32_t partition, float* row) {
  float* flags_word = row + floats_per_row_;
  const uint32_t flags = LoadFlags(flags_word);
  if (flags & kOnDisk) return false;
  StoreFlags(flags_word, flags | kOnDisk);
  ++tier_->durable_rows[partition];
  return true;
}

Result<uint64_t> EmbeddingTable::LoadDurableCounts() {
  Tier& tier = *tier_;
  tier.durable_rows.assign(num_partitions_, 0);
  const std::string prefix = CountRecordPrefix(table_id_);
  bool found = false;
  RETURN_IF_ERROR(tier.options.disk->ForEachRecord(
      prefix, [&](std::string_view key, std::string_view value) {
        if (key.size() != prefix.size() + 4 || value.size() != sizeof(uint64_t)) return;
        uint32_t partition = 0;
        for (size_t i = prefix.size(); i < key.size(); ++i) {
          partition = (partition << 8) | static_cast<unsigned char>(key[i]);
        }
        if (partition >= num_partitions_) return;
        std::memcpy(&tier.durable_rows[partition], value.data(), sizeof(uint64_t));
        found = true;
      }));
  // Written by an ember that did not keep counts (or new): count once, and keep the counts.
  if (!found) return CountDurableRows();
  uint64_t total = 0;
  for (uint64_t count : tier.durable_rows) total += count;
  return total;
}

Result<uint64_t> EmbeddingTable::CountDurableRows() {
  Tier& tier = *tier_;
  RowWrites counts(*tier.options.disk);
  uint64_t total = 0;
  for (uint32_t p = 0; p < num_partitions_; ++p) {
    ASSIGN_OR_RETURN(tier.durable_rows[p], tier.options.disk->CountRowsInPartition(p));
    AddCountRecord(counts, p, tier.durable_rows[p]);
    total += tier.durable_rows[p];
  }
  RETURN_IF_ERROR(tier.options.disk->Write(counts));
  return total;
}

Status EmbeddingTable::RecountRows() {
  if (tier_ == nullptr) return Status::Ok();
  ASSIGN_OR_RETURN(uint64_t total, CountDurableRows());
  rows_.store(total, std::memory_order_relaxed);
  return Status::Ok();
}

void EmbeddingTable::InitTier(const TierOptions& tier) {
  tier_ = std::make_unique<Tier>();
  tier_->options = tier;
  tier_->clocks.resize(num_partitions_);
  tier_->pins = std::make_unique<HintPins>(tier.pin_budget_bytes,
                                           uint64_t{stored_floats_} * sizeof(float), counters_);
  if (PushLog* log = tier.disk->push_log(); log != nullptr) {
    // Before the log drops a full segment, the changed rows it logged are logged again.
    tier_->relogger =
        log->AddRelogger([this](uint64_t through) { return RelogDirtyRows(through); });
  }
}

bool EmbeddingTable::logs_pushes() const {
  return tier_ != nullptr && tier_->options.disk->push_log() != nullptr;
}

bool EmbeddingTable::OverBudget() const {
  return tier_->options.budget != nullptr && tier_->options.budget->exceeded();
}

std::optional<EmbeddingTable::ChosenVictim> EmbeddingTable::ChooseVictimLocked(uint32_t partition) {
  ClockRing& ring = tier_->clocks[partition];
  // At most two sweeps: the first clears reference bits.
  for (size_t step = 0; step < 2 * ring.size(); ++step) {
    float* row = stores_[partition].Find(ring.KeyAtHand());
    EMBER_CHECK(row != nullptr, "resident key", ring.KeyAtHand(), "has no row");
    float* flags_word = row + floats_per_row_;
    const uint32_t flags = LoadFlags(flags_word);
    if ((flags & kChosen) || internal::PinCount(flags) > 0) {
      ring.Advance();
      continue;
    }
    if (flags & kReferenced) {
      StoreFlags(flags_word, flags & ~uint32_t{kReferenced});
      ring.Advance();
      continue;
    }
    StoreFlags(flags_word, flags | kChosen);
    const size_t slot = ring.hand();
    ring.Advance();
    return ChosenVictim{slot, row};
  }
  return std::nullopt;
}

Status EmbeddingTable::EvictWhileOverBudget(std::span<const uint32_t> partitions,
                                            size_t max_rows) {
  Tier& tier = *tier_;
  MemoryBudget& budget = *tier.options.budget;
  const uint64_t row_bytes = uint64_t{stored_floats_} * sizeof(float);
  struct Victim {
    uint32_t partition;
    size_t slot;
  };
  std::vector<Victim> victims;
  RowWrites writes(*tier.options.disk);
  // Victims written to disk for the first time, by partition: its count goes up with the write.
  std::map<uint32_t, uint64_t> new_durable;
  // Choose victims partition by partition; a row is dropped only after its write-back succeeded.
  uint64_t chosen_bytes = 0;
  for (size_t i = 0; victims.size() < max_rows && i < partitions.size() * max_rows; ++i) {
    if (budget.used() <= budget.limit() + chosen_bytes) break;
    const uint32_t partition = partitions[i % partitions.size()];
    const std::optional<ChosenVictim> chosen = ChooseVictimLocked(partition);
    if (!chosen) continue;
    const uint64_t key = tier.clocks[partition].KeyAt(chosen->slot);
    const uint32_t flags = LoadFlags(chosen->row + floats_per_row_);
    if (flags & kDirty) {
      writes.Put(partition, key, std::span<const float>(chosen->row, floats_per_row_));
      NoteRowWritten(partition, key);
      if (!(flags & kOnDisk)) ++new_durable[partition];
    }
    victims.push_back(Victim{partition, chosen->slot});
    chosen_bytes += row_bytes;
  }
  const size_t written = writes.size();
  for (const auto& [partition, added] : new_durable) {
    AddCountRecord(writes, partition, tier.durable_rows[partition] + added);
  }
  Status status = WaitForLoggedPushes(written);
  if (status.ok() && written > 0) {
    // A count the push log holds too is logged again, so that a replay ends with this one.
    if (PushLog* log = tier.options.disk->push_log(); log != nullptr && !new_durable.empty()) {
      status = log->WaitDurable(writes.AppendToLog(*log, PushLog::Origin::kRelog));
    }
    if (status.ok()) status = tier.options.disk->Write(writes);
  }
  if (!status.ok()) {
    // Keep every victim in memory, still changed, for a later eviction to retry.
    for (const Victim& victim : victims) {
      float* flags = stores_[victim.partition].Find(
                         tier.clocks[victim.partition].KeyAt(victim.slot)) + floats_per_row_;
      StoreFlags(flags, LoadFlags(flags) & ~uint32_t{kChosen});
    }
    return status.WithContext("writing back evicted rows");
  }
  for (const auto& [partition, added] : new_durable) tier.durable_rows[partition] += added;
  // Drop in descending slot order per partition, which ClockRing::Remove allows.
  std::sort(victims.begin(), victims.end(), [](const Victim& a, const Victim& b) {
    return a.partition != b.partition ? a.partition < b.partition : a.slot > b.slot;
  });
  for (const Victim& victim : victims) {
    ClockRing& ring = tier.clocks[victim.partition];
    stores_[victim.partition].Erase(ring.KeyAt(victim.slot));
    ring.Remove(victim.slot);
  }
  budget.Release(chosen_bytes);
  tier.resident.fetch_sub(victims.size(), std::memory_order_relaxed);
  counters_.Add(TableStat::kEvictions, victims.size());
  tier.writebacks.fetch_add(written, std::memory_order_relaxed);
  counters_.Add(TableStat::kWritebackBytes, written * uint64_t{floats_per_row_} * sizeof(float));
  return Status::Ok();
}

Status EmbeddingTable::RestoreTiered(uint32_t partition, uint64_t key, std::span<const float> row,
                                     std::span<const float> state) {
  Tier& tier = *tier_;
  std::lock_guard<std::mutex> lock(StripeLock(partition));
  auto [stored, is_new] = stores_[partition].FindOrInsert(key);
  uint32_t flags = kReferenced | kDirty;
  if (is_new) {
    bool on_disk = false;
    // A partition without durable rows (as after Erase, before a restore loads it) has none to
    // look for.
    if (tier.durable_rows[partition] > 0) {
      const uint64_t keys[] = {key};
      const uint32_t partitions[] = {partition};
      Status read = tier.options.disk->MultiGet(
          partitions, keys, [&](size_t, std::span<const float>) { on_disk = true; });
      if (!read.ok()) {
        stores_[partition].Erase(key);
        return read.WithContext("restore into table '" + spec_.name + "'");
      }
    }
    if (on_disk) flags |= kOnDisk;
    else rows_.fetch_add(1, std::memory_order_relaxed);
    tier.clocks[partition].Add(key);
    tier.resident.fetch_add(1, std::memory_order_relaxed);
    if (tier.options.budget != nullptr) {
      tier.options.budget->Charge(uint64_t{stored_floats_} * sizeof(float));
    }
  } else {
    flags |= LoadFlags(stored + floats_per_row_) & (kOnDisk | (~uint32_t{0} << 16));  // and pins
  }
  std::copy(row.begin(), row.end(), stored);
  std::copy(state.begin(), state.end(), stored + spec_.dim);
  StampUpdate(stored);
  StoreFlags(stored + floats_per_row_, flags);
  changes_.Note(partition, key);
  if (!OverBudget()) return Status::Ok();
  const uint32_t partitions[] = {partition};
  return EvictWhileOverBudget(partitions, internal::kEvictionsPerInsert);
}

Result<uint64_t> EmbeddingTable::EraseTiered(uint32_t partition) {
  Tier& tier = *tier_;
  std::lock_guard<std::mutex> lock(StripeLock(partition));
  changes_.Forget(partition);
  RowWrites erasure(*tier.options.disk);
  erasure.DeletePartition(partition);
  AddCountRecord(erasure, partition, 0);
  if (PushLog* log = tier.options.disk->push_log(); log != nullptr) {
    // A replay of the log must not bring back the rows of the partition it logged before; the
    // erasure is logged first, so that no kill leaves the rows deleted but the log without it.
    RETURN_IF_ERROR(log->WaitDurable(erasure.AppendToLog(*log))
                        .WithContext("logging the erasure of partition " +
                                     std::to_string(partition)));
  }
  NoteDiskWrite(partition);
  RETURN_IF_ERROR(tier.options.disk->Write(erasure).WithContext(
      "erasing partition " + std::to_string(partition)));
  uint64_t erased = tier.durable_rows[partition];
  tier.durable_rows[partition] = 0;
  RowStore& store = stores_[partition];
  std::as_const(store).ForEach([&](uint64_t, const float* row) {
    const uint32_t flags = LoadFlags(row + floats_per_row_);
    if (!(flags & kOnDisk)) ++erased;
    if (internal::PinCount(flags) > 0) tier_->pins->ForgetPinnedRow();
  });
  if (tier.options.budget != nullptr) {
    tier.options.budget->Release(uint64_t{store.size()} * stored_floats_ * sizeof(float));
  }
  tier.resident.fetch_sub(store.size(), std::memory_order_relaxed);
  store.Clear();
  tier.clocks[partition].Clear();
  rows_.fetch_sub(erased, std::memory_order_relaxed);
  return erased;
}

Status EmbeddingTable::FlushDirtyRows() {
  if (tier_ == nullptr) return Status::Ok();
  RowWrites writes(*tier_->options.disk);
  for (uint32_t p = 0; p < num_partitions_; ++p) {
    std::lock_guard<std::mutex> lock(StripeLock(p));
    std::vector<float*> flushed;
    uint64_t new_durable = 0;
    stores_[p].ForEach([&](uint64_t key, float* row) {
      const uint32_t flags = LoadFlags(row + floats_per_row_);
      if (!(flags & kDirty)) return;
      writes.Put(p, key, std::span<const float>(row, floats_per_row_));
      flushed.push_back(row);
      if (!(flags & kOnDisk)) ++new_durable;
    });
    const size_t written = writes.size();
    if (written == 0) continue;
    if (new_durable > 0) AddCountRecord(writes, p, tier_->durable_rows[p] + new_durable);
    RETURN_IF_ERROR(WaitForLoggedPushes(written));
    PushLog* log = tier_->options.disk->push_log();
    if (log != nullptr && new_durable > 0) {
      // A count the push log holds too is logged again, so that a replay ends with this one.
      RETURN_IF_ERROR(log->WaitDurable(writes.AppendToLog(*log, PushLog::Origin::kRelog)));
    }
    NoteDiskWrite(p);
    RETURN_IF_ERROR(tier_->options.disk->Write(writes).WithContext("flushing table '" + spec_.name + "'"));
    tier_->durable_rows[p] += new_durable;
    for (float* row : flushed) {
      float* flags = row + floats_per_row_;
      StoreFlags(flags, (LoadFlags(flags) & ~uint32_t{kDirty}) | kOnDisk);
    }
    tier_->writebacks.fetch_add(written, std::memory_order_relaxed);
    counters_.Add(TableStat::kWritebackBytes, written * uint64_t{floats_per_row_} * sizeof(float));
  }
  return Status::Ok();
}

Status EmbeddingTable::WaitForLoggedPushes(size_t rows_to_write) {
  PushLog* log = tier_->options.disk->push_log();
  if (log == nullptr || rows_to_write == 0) return Status::Ok();
  return log->WaitAllAppended().WithContext("logging pushes before writing rows back");
}

Status EmbeddingTable::RelogDirtyRows(uint64_t through) {
  PushLog& log = *tier_->options.disk->push_log();
  RowWrites writes(*tier_->options.disk);
  PushLog::Ticket last = 0;
  uint64_t unwritten_bytes = 0;
  for (uint32_t p = 0; p < num_partitions_; ++p) {
    {
      // Appended under the stripe lock: a later push of these rows is logged after them.
      std::lock_guard<std::mutex> lock(StripeLock(p));
      bool counted = false;
      const uint64_t segment = log.active_segment();
      stores_[p].ForEach([&](uint64_t key, float* row) {
        const uint32_t flags = LoadFlags(row + floats_per_row_);
        // Rows changed since a later segment began are logged there already.
        if (!(flags & kDirty) || !LoggedAtMost(flags, through)) return;
        writes.Put(p, key, std::span<const float>(row, floats_per_row_));
        counted |= MarkDurable(p, row);
        StoreFlags(row + floats_per_row_,
                   WithLogSegment(LoadFlags(row + floats_per_row_), segment));
      });
      if (counted) AddCountRecord(writes, p, tier_->durable_rows[p]);
      if (writes.empty()) continue;
      unwritten_bytes += writes.LogPayload().size();
      last = writes.MoveToLog(log, PushLog::Origin::kRelog);
    }
    // A few group writes' worth at a time: a push appended after all of a table's changed rows
    // (hundreds of MB) would wait for them all.
    if (unwritten_bytes >= kRelogBytesPerWait) {
      RETURN_IF_ERROR(log.WaitDurable(last).WithContext("relogging changed rows"));
      unwritten_bytes = 0;
    }
  }
  return last == 0 ? Status::Ok() : log.WaitDurable(last).WithContext("relogging changed rows");
}

TierStats EmbeddingTable::tier_stats() const {
  TierStats stats;
  if (tier_ == nullptr) return stats;
  stats.resident_rows = tier_->resident.load(std::memory_order_relaxed);
  stats.hits = counters_.Get(TableStat::kHits);
  stats.misses = counters_.Get(TableStat::kMisses);
  stats.loaded = tier_->loaded.load(std::memory_order_relaxed);
  stats.evictions = counters_.Get(TableStat::kEvictions);
  stats.writebacks = tier_->writebacks.load(std::memory_order_relaxed);
  return stats;
}

uint64_t EmbeddingTable::disk_bytes() const {
  return tier_ == nullptr ? 0 : tier_->options.disk->DiskBytes();
}

}  // namespace ember::embedding
