// `ember status`: a running cluster at a glance: the routing epoch, every server with its state,
// partitions, rows and bytes, and the partition moves in progress.
#include <cstdio>

#include "app/commands.h"
#include "common/transport.h"
#include "local/train_summary.h"

namespace ember::app {
namespace {

int Fail(const Status& status) { return PrintError("status", status); }

}  // namespace

int RunStatus(const StatusFlags& flags) {
  zmq::context_t context(1);
  RpcChannel scheduler(context, flags.scheduler);
  const uint64_t id = scheduler.NextRequestId();
  auto reply = scheduler.Call(id, wire::EncodeClusterStatusRequest({id, 0}), Millis(10'000));
  if (!reply.ok()) return Fail(reply.status());
  if (!reply->status.ok()) return Fail(reply->status);
  auto* status = std::get_if<wire::ClusterStatus>(&reply->body);
  if (status == nullptr) return Fail(Internal("the scheduler answered without a status"));

  std::printf(
      "routing epoch %llu, %u partitions, %zu servers; moves: %u in flight, %u planned, "
      "%llu done\n",
      static_cast<unsigned long long>(status->routing.epoch), status->routing.num_partitions,
      status->servers.size(), status->moves_in_flight, status->moves_planned,
      static_cast<unsigned long long>(status->moves_done));
  std::printf("%-6s %-26s %-9s %10s %14s %12s\n", "server", "endpoint", "state", "partitions",
              "rows", "MiB");
  for (const wire::ServerStatus& server : status->servers) {
    std::string rows = "-", mib = "-";
    if (server.state == "live" || server.state == "draining") {
      RpcChannel channel(context, server.endpoint);
      const uint64_t stats_id = channel.NextRequestId();
      auto stats = channel.Call(stats_id, wire::EncodeStatsRequest({stats_id, 0}), Millis(5'000));
      if (stats.ok() && stats->status.ok()) {
        if (auto* s = std::get_if<wire::ServerStats>(&stats->body)) {
          const wire::TableStats sum = local::SumTableStats(*s);
          rows = std::to_string(sum.rows);
          char text[32];
          std::snprintf(text, sizeof(text), "%.1f", sum.bytes / 1048576.0);
          mib = text;
        }
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
