// ShardCounters: what a parameter server counts of its own work (requests, keys, error answers,
// duplicate pushes, partition moves, refused transfers, refusals per limit, the per-table figures
// it counts itself, and each request kind's latency), and the statistics (ServerStats) it
// assembles from them and from its tables' own figures.
//
// Thread-safety: every method may be called from many threads at once (relaxed atomics), but
// AddTable, called only while the server is created.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "common/limits.h"
#include "common/server_stats.h"
#include "common/table_stats.h"
#include "ps/server/request_metrics.h"
#include "ps/server/shard_tables.h"

namespace ember::ps {

enum class ShardCount {
  kPullRequests,
  kPushRequests,
  kKeysPulled,
  kKeysPushed,
  kErrors,            // error answers
  kDuplicatePushes,   // pushes answered without being applied: copies of applied ones
  kMovesIn,           // partition moves completed as the target (adopted)
  kMovesOut,          // and as the source (released)
  kTransfersRefused,  // partition transfers the scheduler's plan did not name
};

class ShardCounters {
 public:
  void Add(ShardCount count, uint64_t n = 1) {
    counts_[Index(count)].fetch_add(n, std::memory_order_relaxed);
  }
  uint64_t Get(ShardCount count) const {
    return counts_[Index(count)].load(std::memory_order_relaxed);
  }
  // Counts one error answer, also for the request being timed on this thread.
  void CountError();
  // Error answers counted on the calling thread: a RequestTimer tells from it whether its request
  // failed.
  static const uint64_t& ErrorsOnThisThread();

  // Refusals per limit, by the handlers and by the server's sockets.
  LimitCounters& limits_hit() { return limits_hit_; }
  // Requests, errors and handling latency per request kind.
  RequestMetrics& requests() { return requests_; }
  const RequestMetrics& requests() const { return requests_; }

  // Starts counting the figures of table `name`.
  void AddTable(const std::string& name) { tables_.try_emplace(name); }
  // The figures of a table named by AddTable.
  TableStatCounters& table(std::string_view name) { return tables_.find(name)->second; }

  // Server `server_id`'s statistics: each of `tables` with its own figures and the ones counted
  // here, these counts, and `partitions_owned`.
  ServerStats Stats(uint32_t server_id, const ShardTables& tables, uint32_t partitions_owned) const;

 private:
  static constexpr size_t kCounts = static_cast<size_t>(ShardCount::kTransfersRefused) + 1;
  static constexpr size_t Index(ShardCount count) { return static_cast<size_t>(count); }

  std::array<std::atomic<uint64_t>, kCounts> counts_{};
  LimitCounters limits_hit_;
  RequestMetrics requests_;
  std::map<std::string, TableStatCounters, std::less<>> tables_;
};

}  // namespace ember::ps
