// ServerStats: one server's counters and the sizes of its tables, as `ember status`, `ember
// train`'s summary and the benchmarks report them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/limits.h"
#include "common/table_stats.h"

namespace ember {

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
