// `ember status`: a running cluster at a glance: the routing epoch, every server with its state,
// partitions, rows and bytes, and the partition moves in progress.
#include <cstdio>

#include "app/command_support.h"
#include "app/commands.h"
#include "ps/client/scheduler_client.h"
#include "ps/client/server_calls.h"

namespace ember::app {
namespace {

int Fail(const Status& status) {
  std::fprintf(stderr, "ember status: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int StatusCommand(int argc, char** argv) {
  const std::vector<FlagSpec> known = {
      {"scheduler", "ENDPOINT", "the running cluster's scheduler"},
  };
  int exit_code = 0;
  auto flags = ParseCommandFlags(argc, argv, "ember status --scheduler ENDPOINT",
                                 "Prints the routing epoch, each server's state, partitions, rows "
                                 "and bytes, and the partition moves in progress.",
                                 known, &exit_code);
  if (!flags) return exit_code;
  if (!flags->Has("scheduler")) {
    std::fprintf(stderr, "ember status: --scheduler is required\n");
    return 2;
  }
  auto status = ps::SchedulerClient(flags->Get("scheduler")).GetClusterStatus(Millis(10'000));
  if (!status.ok()) return Fail(status.status());

  std::printf("routing epoch %llu, %u partitions, %zu servers; moves: %u in flight, %u planned, "
              "%llu done\n",
              static_cast<unsigned long long>(status->routing.epoch),
              status->routing.num_partitions, status->servers.size(), status->moves_in_flight,
              status->moves_planned, static_cast<unsigned long long>(status->moves_done));
  std::printf("%-6s %-26s %-9s %10s %14s %12s\n", "server", "endpoint", "state", "partitions",
              "rows", "MiB");
  for (const ServerStatus& server : status->servers) {
    std::string rows = "-", mib = "-";
    if (server.state == "live" || server.state == "draining") {
      auto stats = ps::GetServerStats(server.endpoint, Millis(5'000));
      if (stats.ok()) {
        uint64_t row_count = 0, bytes = 0;
        for (const auto& table : stats->tables) {
          row_count += table.rows;
          bytes += table.bytes;
        }
        rows = std::to_string(row_count);
        char text[32];
        std::snprintf(text, sizeof(text), "%.1f", bytes / 1048576.0);
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
