// DiskTier: choosing rows to evict by CLOCK, writing changed rows back (evicted into the cold row
// file or RocksDB, flushed, or relogged before the push log drops their segment).
#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "embedding/disk_tier.h"
#include "embedding/tier_row_flags.h"

namespace ember::embedding {
namespace {

// Re-logging a table's changed rows waits for what it appended after about this many bytes.
constexpr uint64_t kRelogBytesPerWait = uint64_t{1} << 20;
// How many slots ahead of the CLOCK hand a row's flags word is brought into the cache.
constexpr size_t kClockPrefetchDistance = 4;

}  // namespace

std::optional<DiskTier::ChosenVictim> DiskTier::ChooseVictimLocked(uint32_t partition) {
  ClockRing& ring = clocks_[partition];
  // At most two sweeps: the first clears reference bits.
  for (size_t step = 0; step < 2 * ring.size(); ++step) {
    // The flags words the hand reaches next, a few slots ahead.
    PrefetchRow(ring.RowAhead(kClockPrefetchDistance) + table_.floats_per_row, 1);
    float* row = ring.RowAtHand();
    float* flags_word = row + table_.floats_per_row;
    const uint32_t flags = LoadFlags(flags_word);
    if ((flags & kChosen) || PinCount(flags) > 0) {
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

Status DiskTier::EvictWhileOverBudget(std::span<const uint32_t> partitions, size_t max_rows) {
  MemoryBudget& budget = *budget_;
  const uint32_t floats_per_row = table_.floats_per_row;
  struct Victim {
    uint32_t partition;
    size_t slot;
    uint64_t key;
    float* row;
  };
  std::vector<Victim> victims;
  // Every victim's row but those kept changed in the cold row file, valid until the first victim
  // is dropped: once RocksDB holds them, so does the file.
  std::vector<ColdRow> kept;
  // Changed victims with a durable version: they may wait in the cold row file.
  std::vector<ColdRow> kept_changed;
  RowWrites writes(disk_);
  // Victims written to disk for the first time, by partition: its count goes up with the write.
  std::map<uint32_t, uint64_t> new_durable;
  // Choose victims partition by partition; a row is dropped only after its write-back succeeded.
  uint64_t chosen_bytes = 0;
  for (size_t i = 0; victims.size() < max_rows && i < partitions.size() * max_rows; ++i) {
    if (budget.used() <= budget.limit() + chosen_bytes) break;
    const uint32_t partition = partitions[i % partitions.size()];
    const std::optional<ChosenVictim> chosen = ChooseVictimLocked(partition);
    if (!chosen) continue;
    const uint64_t key = clocks_[partition].KeyAt(chosen->slot);
    const uint32_t flags = LoadFlags(chosen->row + floats_per_row);
    victims.push_back(Victim{partition, chosen->slot, key, chosen->row});
    chosen_bytes += row_bytes_;
    if (!(flags & kDirty)) {
      kept.push_back(ColdRow{partition, key, chosen->row});
      continue;
    }
    NoteRowWritten(partition, key);
    // A row whose count is durable already needs no count record: it may wait in the file.
    if (flags & kOnDisk) {
      kept_changed.push_back(ColdRow{partition, key, chosen->row});
      continue;
    }
    writes.Put(partition, key, std::span<const float>(chosen->row, floats_per_row));
    ++new_durable[partition];
    kept.push_back(ColdRow{partition, key, chosen->row});
  }
  KeepChangedColdLocked(kept_changed, [&](size_t i) {
    const ColdRow& refused = kept_changed[i];
    writes.Put(refused.partition, refused.key, std::span<const float>(refused.row, floats_per_row));
    kept.push_back(refused);
  });
  const size_t written = writes.size();
  const Status status = WriteVictimsBack(writes, new_durable);
  if (!status.ok()) {
    // Keep every victim in memory, still changed, for a later eviction to retry (those kept in
    // the cold row file too: memory's copy is the same).
    for (const Victim& victim : victims) {
      float* flags = victim.row + floats_per_row;
      StoreFlags(flags, LoadFlags(flags) & ~uint32_t{kChosen});
    }
    return status.WithContext("writing back evicted rows");
  }
  for (const auto& [partition, added] : new_durable) durable_rows_[partition] += added;
  // The other victims, changed or not, hold what RocksDB now holds: the cold row file keeps them.
  KeepCold(kept);
  // Drop in descending slot order per partition, which ClockRing::Remove allows.
  std::sort(victims.begin(), victims.end(), [](const Victim& a, const Victim& b) {
    return a.partition != b.partition ? a.partition < b.partition : a.slot > b.slot;
  });
  for (const Victim& victim : victims) {
    ClockRing& ring = clocks_[victim.partition];
    table_.rows.store(victim.partition).Erase(victim.key);
    ring.Remove(victim.slot);
  }
  budget.Release(chosen_bytes);
  resident_.fetch_sub(victims.size(), std::memory_order_relaxed);
  table_.counters.Add(TableStat::kEvictions, victims.size());
  writebacks_.fetch_add(written, std::memory_order_relaxed);
  table_.counters.Add(TableStat::kWritebackBytes,
                      written * uint64_t{floats_per_row} * sizeof(float));
  return Status::Ok();
}

Status DiskTier::WriteVictimsBack(RowWrites& writes,
                                  const std::map<uint32_t, uint64_t>& new_durable) {
  const size_t written = writes.size();
  for (const auto& [partition, added] : new_durable) {
    AddCountRecord(writes, partition, durable_rows_[partition] + added);
  }
  RETURN_IF_ERROR(WaitForLoggedPushes(written));
  if (written == 0) return Status::Ok();
  // A count the push log holds too is logged again, so that a replay ends with this one.
  if (PushLog* log = disk_.push_log(); log != nullptr && !new_durable.empty()) {
    RETURN_IF_ERROR(log->WaitDurable(writes.AppendToLog(*log, PushLog::Origin::kRelog)));
  }
  return disk_.Write(writes);
}

Status DiskTier::FlushDirtyRows() {
  const uint32_t floats_per_row = table_.floats_per_row;
  RowWrites writes(disk_);
  for (uint32_t p = 0; p < table_.rows.num_partitions(); ++p) {
    std::lock_guard<std::mutex> lock(table_.rows.LockOf(p));
    std::vector<ColdRow> flushed;
    uint64_t new_durable = 0;
    table_.rows.store(p).ForEach([&](uint64_t key, float* row) {
      const uint32_t flags = LoadFlags(row + floats_per_row);
      if (!(flags & kDirty)) return;
      writes.Put(p, key, std::span<const float>(row, floats_per_row));
      flushed.push_back(ColdRow{p, key, row});
      if (!(flags & kOnDisk)) ++new_durable;
    });
    // Then the rows changed in the cold row file.
    RETURN_IF_ERROR(
        WriteBackChangedColdRowsLocked(p).WithContext("flushing table '" + table_.name + "'"));
    const size_t written = writes.size();
    if (written == 0) continue;
    if (new_durable > 0) AddCountRecord(writes, p, durable_rows_[p] + new_durable);
    RETURN_IF_ERROR(WaitForLoggedPushes(written));
    PushLog* log = disk_.push_log();
    if (log != nullptr && new_durable > 0) {
      // A count the push log holds too is logged again, so that a replay ends with this one.
      RETURN_IF_ERROR(log->WaitDurable(writes.AppendToLog(*log, PushLog::Origin::kRelog)));
    }
    NoteDiskWrite(p);
    RETURN_IF_ERROR(disk_.Write(writes).WithContext("flushing table '" + table_.name + "'"));
    durable_rows_[p] += new_durable;
    KeepCold(flushed);
    for (const ColdRow& kept : flushed) {
      float* flags = kept.row + floats_per_row;
      StoreFlags(flags, (LoadFlags(flags) & ~uint32_t{kDirty}) | kOnDisk);
    }
    writebacks_.fetch_add(written, std::memory_order_relaxed);
    table_.counters.Add(TableStat::kWritebackBytes,
                        written * uint64_t{floats_per_row} * sizeof(float));
  }
  return Status::Ok();
}

Status DiskTier::WaitForLoggedPushes(size_t rows_to_write) {
  PushLog* log = disk_.push_log();
  if (log == nullptr || rows_to_write == 0) return Status::Ok();
  return log->WaitAllAppended().WithContext("logging pushes before writing rows back");
}

Status DiskTier::RelogDirtyRows(uint64_t through) {
  const uint32_t floats_per_row = table_.floats_per_row;
  PushLog& log = *disk_.push_log();
  RowWrites writes(disk_);
  PushLog::Ticket last = 0;
  uint64_t unwritten_bytes = 0;
  for (uint32_t p = 0; p < table_.rows.num_partitions(); ++p) {
    {
      // Appended under the stripe lock: a later push of these rows is logged after them.
      std::lock_guard<std::mutex> lock(table_.rows.LockOf(p));
      bool counted = false;
      const uint64_t segment = log.active_segment();
      table_.rows.store(p).ForEach([&](uint64_t key, float* row) {
        const uint32_t flags = LoadFlags(row + floats_per_row);
        // Rows changed since a later segment began are logged there already.
        if (!(flags & kDirty) || !LoggedAtMost(flags, through)) return;
        writes.Put(p, key, std::span<const float>(row, floats_per_row));
        counted |= MarkDurable(p, row);
        StoreFlags(row + floats_per_row, WithLogSegment(LoadFlags(row + floats_per_row), segment));
      });
      RelogChangedColdRowsLocked(p, through, segment, writes);
      if (counted) AddCountRecord(writes, p, durable_rows_[p]);
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

}  // namespace ember::embedding
