// `ember status`: a running cluster at a glance: the routing epoch, every server with its state,
// partitions, rows and bytes, and the partition moves in progress; then what the scheduler and
// each server refused for their limits (docs/limits.md) and for non-finite gradients.
#include <cstdio>

#include "app/commands.h"
#include "local/train_summary.h"
#include "ps/client/scheduler_client.h"
#include "ps/client/server_calls.h"

namespace ember::app {
namespace {

int Fail(const Status& status) { return PrintError("status", status); }

// "limits hit by WHO: keys_per_message 3, waiters 1", when any was.
void PrintLimitsHit(const std::string& who, const std::vector<LimitHit>& hits) {
  if (hits.empty()) return;
  std::string line = "limits hit by " + who + ":";
  for (size_t i = 0; i < hits.size(); ++i) {
    line += (i == 0 ? " " : ", ") + hits[i].limit + " " + std::to_string(hits[i].count);
  }
  std::printf("%s\n", line.c_str());
}

}  // namespace

int RunStatus(const StatusFlags& flags) {
  auto security = ResolveSecurity(flags.security);
  if (!security.ok()) return PrintError("status", security.status(), 2);
  auto status = ps::SchedulerClient(flags.scheduler, *security).GetClusterStatus(Millis(10'000));
  if (!status.ok()) return Fail(status.status());

  std::printf(
      "routing epoch %llu, %u partitions, %zu servers; moves: %u in flight, %u planned, "
      "%llu done\n",
      static_cast<unsigned long long>(status->routing.epoch), status->routing.num_partitions,
      status->servers.size(), status->moves_in_flight, status->moves_planned,
      static_cast<unsigned long long>(status->moves_done));
  std::printf("%-6s %-26s %-9s %10s %14s %12s\n", "server", "endpoint", "state", "partitions",
              "rows", "MiB");
  std::vector<ServerStats> answered;
  for (const ServerStatus& server : status->servers) {
    std::string rows = "-", mib = "-";
    if (server.state == "live" || server.state == "draining") {
      const ServerInfo info = server.id < status->routing.servers.size()
                                  ? status->routing.servers[server.id]
                                  : ServerInfo{server.id, server.endpoint, ""};
      auto stats = ps::GetServerStats(info, *security, Millis(5'000));
      if (stats.ok()) {
        answered.push_back(*stats);
        const TableStats sum = local::SumTableStats(*stats);
        rows = std::to_string(sum.rows);
        char text[32];
        std::snprintf(text, sizeof(text), "%.1f", sum.bytes / 1048576.0);
        mib = text;
      } else {
        rows = "(no answer)";
      }
    }
    std::printf("%-6u %-26s %-9s %10u %14s %12s\n", server.id, server.endpoint.c_str(),
                server.state.c_str(), server.partitions, rows.c_str(), mib.c_str());
  }
  PrintLimitsHit("the scheduler", status->limits_hit);
  for (const ServerStats& stats : answered) {
    const std::string who = "server " + std::to_string(stats.server_id);
    PrintLimitsHit(who, stats.limits_hit);
    const TableStats sum = local::SumTableStats(stats);
    if (sum.non_finite_refused + sum.non_finite_skipped > 0) {
      std::printf("non-finite gradients at %s: %llu pushes refused, %llu rows skipped\n",
                  who.c_str(), static_cast<unsigned long long>(sum.non_finite_refused),
                  static_cast<unsigned long long>(sum.non_finite_skipped));
    }
  }
  return 0;
}

}  // namespace ember::app
