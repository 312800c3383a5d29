// The figures a server reports for each of its tables, declared once. EMBER_TABLE_STATS lists
// them; from that list follow the TableStats struct, its wire fields (common/wire_data_plane.cc,
// beside the ember.capnp field of the same name), the Prometheus families
// (ps/server/server_metrics.cc), the run log's sums (local/train_summary.cc) and TableStatCounters,
// the atomic counters a table and its server count into. Adding a figure takes a line here, a
// field in ember.capnp and the code that counts it.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace ember {

// X(field, WireName, Type, metric, help, logged) for each figure, in the order of ember.capnp's
// TableStats: `field` names the TableStats member and WireName the ember.capnp field (as its
// generated accessors spell it); Type is Counter (only grows; `metric` ends in _total) or Gauge (a
// size now); `metric` and `help` make its Prometheus family (one sample per table); `logged`: the
// run log's per-server summary has it.
#define EMBER_TABLE_STATS(X)                                                                       \
  X(rows, Rows, Gauge, "ember_server_table_rows", "Rows of the table on this server.", true)       \
  X(bytes, Bytes, Gauge, "ember_server_table_bytes",                                               \
    "Bytes of the table's rows (with optimizer state) on this server.", true)                      \
  X(resident_rows, ResidentRows, Gauge, "ember_server_table_resident_rows",                        \
    "Rows of the table held in memory.", true)                                                     \
  X(disk_bytes, DiskBytes, Gauge, "ember_server_table_disk_bytes",                                 \
    "Bytes of the table's rows on disk (RocksDB).", true)                                          \
  X(hits, Hits, Counter, "ember_server_tier_hits_total", "Row lookups served from memory.", true)  \
  X(misses, Misses, Counter, "ember_server_tier_misses_total", "Row lookups that went to disk.",   \
    true)                                                                                          \
  X(evictions, Evictions, Counter, "ember_server_tier_evictions_total",                            \
    "Rows evicted from memory to disk under the memory budget.", true)                             \
  X(not_admitted, NotAdmitted, Counter, "ember_server_admission_refusals_total",                   \
    "New keys the table's admission policy did not admit.", true)                                  \
  X(updates_dropped, UpdatesDropped, Counter, "ember_server_updates_dropped_total",                \
    "Pushed updates dropped for keys that were not admitted.", true)                               \
  X(expired, Expired, Counter, "ember_server_rows_expired_total",                                  \
    "Rows deleted for passing the table's TTL.", true)                                             \
  X(non_finite_refused, NonFiniteRefused, Counter, "ember_server_non_finite_pushes_refused_total", \
    "Pushes refused for a NaN or infinite gradient.", false)                                       \
  X(non_finite_skipped, NonFiniteSkipped, Counter, "ember_server_non_finite_rows_skipped_total",   \
    "Rows left out of pushes for a NaN or infinite gradient.", false)                              \
  X(hinted_keys, HintedKeys, Counter, "ember_server_hinted_keys_total",                            \
    "Keys named by look-ahead hints.", true)                                                       \
  X(prefetched_rows, PrefetchedRows, Counter, "ember_server_prefetched_rows_total",                \
    "Rows look-ahead hints read from disk ahead of their requests.", true)                         \
  X(pinned_rows, PinnedRows, Gauge, "ember_server_pinned_rows",                                    \
    "Rows pinned in memory by look-ahead hints.", false)                                           \
  X(pinned_bytes, PinnedBytes, Gauge, "ember_server_pinned_bytes",                                 \
    "Bytes of the rows pinned by look-ahead hints (bounded by the pin budget).", false)            \
  X(pins_refused, PinsRefused, Counter, "ember_server_pins_refused_total",                         \
    "Hinted rows left unpinned because the pin budget was full.", true)                            \
  X(created_ahead, CreatedAhead, Counter, "ember_server_rows_created_ahead_total",                 \
    "New rows look-ahead hints created ahead of their requests.", true)                            \
  X(tracked_change_keys, TrackedChangeKeys, Gauge, "ember_server_tracked_change_keys",             \
    "Keys of changed rows held for the next incremental checkpoint cut.", false)                   \
  X(writeback_bytes, WritebackBytes, Counter, "ember_server_tier_writeback_bytes_total",           \
    "Bytes of changed rows written back to disk when evicted or flushed.", true)

struct TableStats {
  std::string name;
#define EMBER_DECLARE_TABLE_STAT(field, ...) uint64_t field = 0;
  EMBER_TABLE_STATS(EMBER_DECLARE_TABLE_STAT)
#undef EMBER_DECLARE_TABLE_STAT
};

// One enumerator per figure, named after its wire field: TableStat::kRows, TableStat::kHits, ...
enum class TableStat : uint8_t {
#define EMBER_TABLE_STAT_ENUMERATOR(field, Name, ...) k##Name,
  EMBER_TABLE_STATS(EMBER_TABLE_STAT_ENUMERATOR)
#undef EMBER_TABLE_STAT_ENUMERATOR
};
#define EMBER_COUNT_TABLE_STAT(...) +1
inline constexpr size_t kTableStatCount = 0 EMBER_TABLE_STATS(EMBER_COUNT_TABLE_STAT);
#undef EMBER_COUNT_TABLE_STAT

// The field of `stats` that `stat` names.
inline uint64_t& StatField(TableStats& stats, TableStat stat) {
  switch (stat) {
#define EMBER_TABLE_STAT_CASE(field, Name, ...) \
  case TableStat::k##Name:                      \
    return stats.field;
    EMBER_TABLE_STATS(EMBER_TABLE_STAT_CASE)
#undef EMBER_TABLE_STAT_CASE
  }
  return stats.rows;  // unreachable: every enumerator has its case
}

// Lock-free counters of a table's figures, one per TableStat, for the code that counts them
// (many threads at once); AddTo adds them into a report.
class TableStatCounters {
 public:
  void Add(TableStat stat, uint64_t n = 1) {
    values_[static_cast<size_t>(stat)].fetch_add(n, std::memory_order_relaxed);
  }
  void Subtract(TableStat stat, uint64_t n = 1) {
    values_[static_cast<size_t>(stat)].fetch_sub(n, std::memory_order_relaxed);
  }
  uint64_t Get(TableStat stat) const {
    return values_[static_cast<size_t>(stat)].load(std::memory_order_relaxed);
  }
  std::atomic<uint64_t>& Value(TableStat stat) { return values_[static_cast<size_t>(stat)]; }
  // Adds every counter to the field of `stats` it names.
  void AddTo(TableStats& stats) const {
    for (size_t i = 0; i < kTableStatCount; ++i) {
      StatField(stats, static_cast<TableStat>(i)) += values_[i].load(std::memory_order_relaxed);
    }
  }

 private:
  std::array<std::atomic<uint64_t>, kTableStatCount> values_{};
};

}  // namespace ember
