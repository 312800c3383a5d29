// ShardCounters: a server's counts, and the statistics assembled from them.
#include "ps/server/shard_counters.h"

namespace ember::ps {
namespace {

// Error answers counted on this thread: a RequestTimer tells from it whether its request failed.
thread_local uint64_t t_errors_counted = 0;

}  // namespace

void ShardCounters::CountError() {
  Add(ShardCount::kErrors);
  ++t_errors_counted;
}

const uint64_t& ShardCounters::ErrorsOnThisThread() { return t_errors_counted; }

ServerStats ShardCounters::Stats(uint32_t server_id, const ShardTables& tables,
                                 uint32_t partitions_owned) const {
  ServerStats stats;
  stats.server_id = server_id;
  for (const auto& [name, table] : tables) {
    TableStats& figures = stats.tables.emplace_back();
    figures.name = name;
    table->ReportStats(figures);
    tables_.find(name)->second.AddTo(figures);
  }
  stats.pull_requests = Get(ShardCount::kPullRequests);
  stats.push_requests = Get(ShardCount::kPushRequests);
  stats.keys_pulled = Get(ShardCount::kKeysPulled);
  stats.keys_pushed = Get(ShardCount::kKeysPushed);
  stats.errors = Get(ShardCount::kErrors);
  stats.partitions_owned = partitions_owned;
  stats.limits_hit = limits_hit_.Hits();
  return stats;
}

}  // namespace ember::ps
