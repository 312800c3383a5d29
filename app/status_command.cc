// `ember status`: a running cluster at a glance: the routing epoch, every server with its state,
// partitions, rows and bytes, and the partition moves in progress; then what the scheduler and
// each server refused for their limits (docs/limits.md) and for non-finite gradients. With
// --watch it refreshes every --every seconds (in place on a terminal, as successive blocks
// otherwise), adding each server's keys pulled and pushed per second and the moves' rate and ETA,
// until Ctrl-C or --count refreshes.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/commands.h"
#include "app/process_setup.h"
#include "common/human_format.h"
#include "common/string_printf.h"
#include "local/move_progress.h"
#include "local/run_log.h"
#include "local/train_summary.h"
#include "ps/client/scheduler_client.h"
#include "ps/client/server_calls.h"

namespace ember::app {
namespace {

constexpr CommandText kStatusCommand = {
    .name = "status",
    .summary = "a running cluster's servers, partitions, rows and moves",
    .usage = "ember status --scheduler ENDPOINT",
    .description =
        "Prints the routing epoch, each server's state, partitions, rows and bytes, and the "
        "partition moves in progress.",
};

void AddStatusFlags(CLI::App* command, StatusFlags* flags) {
  AddSchedulerEndpointFlag(command, &flags->scheduler)
      ->required();
  command->add_flag("--watch", flags->watch,
                    "refresh until Ctrl-C, with keys/s per server and the moves' rate and ETA")
      ->group("watching");
  AddValue(command, "--every", &flags->every, "SECONDS", "seconds between refreshes (default 2)")
      ->group("watching");
  AddCount(command, "--count", &flags->count, "N", "stop after N refreshes (default: never)")
      ->group("watching");
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
}

}  // namespace

Command MakeStatusCommand(CLI::App& ember) {
  return MakeCommand(ember, kStatusCommand, AddStatusFlags, RunStatus);
}

namespace {

using Clock = std::chrono::steady_clock;

// "limits hit by WHO: keys_per_message 3, waiters 1", when any was.
std::string LimitsHit(const std::string& who, const std::vector<LimitHit>& hits) {
  if (hits.empty()) return "";
  std::string line = "limits hit by " + who + ":";
  for (size_t i = 0; i < hits.size(); ++i) {
    line += (i == 0 ? " " : ", ") + hits[i].limit + " " + std::to_string(hits[i].count);
  }
  return line + "\n";
}

// The cluster at one moment: the scheduler's view and each live server's stats.
struct Snapshot {
  Clock::time_point time;
  ClusterStatus cluster;
  std::vector<std::optional<ServerStats>> stats;  // by position in cluster.servers
};

Result<Snapshot> TakeSnapshot(const StatusFlags& flags, const TransportSecurity& security) {
  Snapshot snapshot;
  ASSIGN_OR_RETURN(snapshot.cluster,
                   ps::SchedulerClient(flags.scheduler, security).GetClusterStatus(Millis(10'000)));
  snapshot.time = Clock::now();
  for (const ServerStatus& server : snapshot.cluster.servers) {
    std::optional<ServerStats> stats;
    if (server.state == "live" || server.state == "draining") {
      const ServerInfo info = server.id < snapshot.cluster.routing.servers.size()
                                  ? snapshot.cluster.routing.servers[server.id]
                                  : ServerInfo{server.id, server.endpoint, ""};
      auto answered = ps::GetServerStats(info, security, Millis(5'000));
      if (answered.ok()) stats = std::move(*answered);
    }
    snapshot.stats.push_back(std::move(stats));
  }
  return snapshot;
}

// Keys per second of server `id` between two snapshots, or "-".
std::string KeysPerSecond(const Snapshot& now, const Snapshot* before, size_t index, bool pulled) {
  if (before == nullptr || !now.stats[index]) return "-";
  const uint32_t id = now.cluster.servers[index].id;
  for (size_t i = 0; i < before->stats.size(); ++i) {
    if (!before->stats[i] || before->cluster.servers[i].id != id) continue;
    const double seconds = std::chrono::duration<double>(now.time - before->time).count();
    const uint64_t then = pulled ? before->stats[i]->keys_pulled : before->stats[i]->keys_pushed;
    const uint64_t current = pulled ? now.stats[index]->keys_pulled : now.stats[index]->keys_pushed;
    if (seconds <= 0 || current < then) return "-";
    return StringPrintf("%.0f", (current - then) / seconds);
  }
  return "-";
}

// The status as text; with `before` (watching) also rates since then, and the moves' progress.
std::string Render(const Snapshot& now, const Snapshot* before, const local::MoveProgress* moves) {
  const ClusterStatus& cluster = now.cluster;
  std::string text = StringPrintf(
      "routing epoch %llu, %u partitions, %zu servers; moves: %u in flight, %u planned, %llu done",
      static_cast<unsigned long long>(cluster.routing.epoch), cluster.routing.num_partitions,
      cluster.servers.size(), cluster.moves_in_flight, cluster.moves_planned,
      static_cast<unsigned long long>(cluster.moves_done));
  if (moves != nullptr && cluster.moves_in_flight + cluster.moves_planned > 0) {
    const std::optional<double> rate = moves->MovesPerSecond();
    const std::optional<double> eta = moves->EtaSeconds();
    text += StringPrintf(", %s/s, eta %s", rate ? StringPrintf("%.2f", *rate).c_str() : "?",
                         eta ? FormatDuration(*eta).c_str() : "?");
  }
  text += "\n";
  const bool rates = moves != nullptr;
  text += StringPrintf("%-6s %-26s %-9s %10s %14s %12s", "server", "endpoint", "state",
                       "partitions", "rows", "MiB");
  text += rates ? StringPrintf(" %13s %13s\n", "pulled keys/s", "pushed keys/s") : "\n";
  for (size_t i = 0; i < cluster.servers.size(); ++i) {
    const ServerStatus& server = cluster.servers[i];
    std::string rows = "-", mib = "-";
    if (now.stats[i]) {
      const TableStats sum = local::SumTableStats(*now.stats[i]);
      rows = std::to_string(sum.rows);
      mib = StringPrintf("%.1f", sum.bytes / 1048576.0);
    } else if (server.state == "live" || server.state == "draining") {
      rows = "(no answer)";
    }
    text += StringPrintf("%-6u %-26s %-9s %10u %14s %12s", server.id, server.endpoint.c_str(),
                         server.state.c_str(), server.partitions, rows.c_str(), mib.c_str());
    text += rates ? StringPrintf(" %13s %13s\n", KeysPerSecond(now, before, i, true).c_str(),
                                 KeysPerSecond(now, before, i, false).c_str())
                  : "\n";
  }
  text += LimitsHit("the scheduler", cluster.limits_hit);
  for (const std::optional<ServerStats>& stats : now.stats) {
    if (!stats) continue;
    const std::string who = "server " + std::to_string(stats->server_id);
    text += LimitsHit(who, stats->limits_hit);
    const TableStats sum = local::SumTableStats(*stats);
    if (sum.non_finite_refused + sum.non_finite_skipped > 0) {
      text += StringPrintf("non-finite gradients at %s: %llu pushes refused, %llu rows skipped\n",
                           who.c_str(), static_cast<unsigned long long>(sum.non_finite_refused),
                           static_cast<unsigned long long>(sum.non_finite_skipped));
    }
  }
  return text;
}

}  // namespace

int RunStatus(const StatusFlags& flags) {
  auto security = ResolveSecurity(flags.security);
  if (!security.ok()) return PrintError("status", security.status(), 2);
  if (!flags.watch) {
    auto snapshot = TakeSnapshot(flags, *security);
    if (!snapshot.ok()) return PrintError("status", snapshot.status());
    std::fputs(Render(*snapshot, nullptr, nullptr).c_str(), stdout);
    return 0;
  }
  if (!(flags.every > 0)) return PrintError("status", InvalidArgument("--every: must be > 0"), 2);
  std::atomic<bool> stop{false};
  StopOnSignals(&stop);
  const bool terminal = ::isatty(STDOUT_FILENO) == 1;
  local::MoveProgress moves;
  std::optional<Snapshot> before;
  for (uint32_t refresh = 0; !stop.load() && (flags.count == 0 || refresh < flags.count);
       ++refresh) {
    if (refresh > 0) {
      // Sleeps in short steps so that Ctrl-C ends the watch at once.
      const auto wake = Clock::now() + std::chrono::duration<double>(flags.every);
      while (!stop.load() && Clock::now() < wake) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (stop.load()) break;
    }
    auto snapshot = TakeSnapshot(flags, *security);
    if (!snapshot.ok()) return PrintError("status", snapshot.status());
    moves.Add(snapshot->time, snapshot->cluster.moves_done,
              snapshot->cluster.moves_in_flight + snapshot->cluster.moves_planned);
    const std::time_t wall = std::time(nullptr);
    char clock_text[16];
    std::strftime(clock_text, sizeof(clock_text), "%H:%M:%S", std::localtime(&wall));
    std::string frame = terminal ? "\033[H\033[2J" : (refresh > 0 ? "\n" : "");
    frame += std::string("ember status at ") + clock_text + " (every " +
             StringPrintf("%g", flags.every) + " s; Ctrl-C stops)\n";
    frame += Render(*snapshot, before ? &*before : nullptr, &moves);
    std::fputs(frame.c_str(), stdout);
    std::fflush(stdout);
    before = std::move(*snapshot);
  }
  return 0;
}

}  // namespace ember::app
