// `ember status`: a running cluster at a glance: the routing epoch, every server with its state,
// partitions, rows and bytes, and the partition moves in progress.
#include <cstdio>

#include "app/commands.h"
#include "local/train_summary.h"
#include "ps/client/scheduler_client.h"
#include "ps/client/server_calls.h"

namespace ember::app {
namespace {

int Fail(const Status& status) { return PrintError("status", status); }

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
  for (const ServerStatus& server : status->servers) {
    std::string rows = "-", mib = "-";
    if (server.state == "live" || server.state == "draining") {
      const ServerInfo info = server.id < status->routing.servers.size()
                                  ? status->routing.servers[server.id]
                                  : ServerInfo{server.id, server.endpoint, ""};
      auto stats = ps::GetServerStats(info, *security, Millis(5'000));
      if (stats.ok()) {
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
  return 0;
}

}  // namespace ember::app
