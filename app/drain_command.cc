// `ember drain`: moves every partition off one server of a running cluster; the server exits by
// itself once it holds none (scheduler/shard_moves.h).
#include <cstdio>
#include <thread>

#include "app/command_support.h"
#include "app/commands.h"
#include "ps/client/scheduler_client.h"

namespace ember::app {

int DrainCommand(int argc, char** argv) {
  const std::vector<FlagSpec> known = {
      {"scheduler", "ENDPOINT", "the running cluster's scheduler"},
      {"server", "ID", "the server to drain (ids as `ember status` shows them)"},
      {"wait-s", "S", "wait up to S seconds for the partitions to move (default 0: do not wait)"},
  };
  int exit_code = 0;
  auto flags = ParseCommandFlags(
      argc, argv, "ember drain --scheduler ENDPOINT --server ID",
      "Moves every partition of a server to the others (fair shares, paced by their "
      "--move-bandwidth) while training goes on; the drained server then exits.",
      known, &exit_code);
  if (!flags) return exit_code;
  auto server = flags->GetUint("server");
  auto wait = flags->GetUint("wait-s");
  if (!flags->Has("scheduler") || !server.ok() || !server->has_value() || !wait.ok()) {
    std::fprintf(stderr, "ember drain: --scheduler and --server ID are required\n");
    return 2;
  }
  ps::SchedulerClient scheduler(flags->Get("scheduler"));
  Status status = scheduler.Drain(static_cast<uint32_t>(**server), Millis(10'000));
  if (!status.ok()) {
    std::fprintf(stderr, "ember drain: %s\n", status.ToString().c_str());
    return 1;
  }
  std::printf("draining server %llu\n", static_cast<unsigned long long>(**server));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait->value_or(0));
  while (std::chrono::steady_clock::now() < deadline) {
    auto cluster = scheduler.GetClusterStatus(Millis(10'000));
    if (cluster.ok()) {
      for (const ServerStatus& s : cluster->servers) {
        if (s.id == **server && s.partitions == 0) {
          std::printf("server %u holds no partition any more\n", s.id);
          return 0;
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return wait->value_or(0) == 0 ? 0 : 1;
}

}  // namespace ember::app
