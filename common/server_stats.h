// ServerStats: one server's counters and the sizes of its tables, as `ember status`, `ember
// train`'s summary and the benchmarks report them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/limits.h"

namespace ember {

struct TableStats {
  std::string name;
  uint64_t rows = 0;
  uint64_t bytes = 0;
  uint64_t resident_rows = 0;
  uint64_t disk_bytes = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;
  uint64_t not_admitted = 0;
  uint64_t updates_dropped = 0;
  uint64_t expired = 0;
  uint64_t non_finite_refused = 0;  // pushes refused for a NaN or infinite gradient
  uint64_t non_finite_skipped = 0;  // rows left out of pushes for a NaN or infinite gradient
  // Look-ahead (tiered tables only): keys hinted, rows read ahead, and the pins held now.
  uint64_t hinted_keys = 0;
  uint64_t prefetched_rows = 0;
  uint64_t pinned_rows = 0;
  uint64_t pinned_bytes = 0;
  uint64_t pins_refused = 0;  // hinted rows not pinned because the pin budget was full
  uint64_t created_ahead = 0;  // new rows hints created ahead of their requests
  // Keys of changed rows held for the next incremental checkpoint cut (embedding/change_tracker.h).
  uint64_t tracked_change_keys = 0;
};

struct ServerStats {
  uint32_t server_id = 0;
  std::vector<TableStats> tables;
  uint64_t pull_requests = 0;
  uint64_t push_requests = 0;
  uint64_t keys_pulled = 0;
  uint64_t keys_pushed = 0;
  uint64_t errors = 0;
  uint32_t partitions_owned = 0;
  std::vector<LimitHit> limits_hit;  // the limits this server refused something for
};

}  // namespace ember
