// `ember drain`: moves every partition off one server of a running cluster; the server exits by
// itself once it holds none (scheduler/shard_moves.h).
#include <algorithm>
#include <cstdio>
#include <optional>
#include <thread>

#include "app/commands.h"
#include "common/progress_meter.h"
#include "ps/client/scheduler_client.h"

namespace ember::app {
namespace {

constexpr CommandText kDrainCommand = {
    .name = "drain",
    .summary = "move every partition off a server of a running cluster; it then exits",
    .usage = "ember drain --scheduler ENDPOINT --server ID",
    .description =
        "Moves every partition of a server to the others (fair shares, paced by their "
        "--move-bandwidth) while training goes on; the drained server then exits.",
};

void AddDrainFlags(CLI::App* command, DrainFlags* flags) {
  AddSchedulerEndpointFlag(command, &flags->scheduler)
      ->required();
  AddCount(command, "--server", &flags->server, "ID",
           "the server to drain (ids as `ember status` shows them)")
      ->required();
  AddCount(command, "--wait-s", &flags->wait_s, "S",
           "wait up to S seconds for the partitions to move (default 0: do not wait)");
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
}

}  // namespace

Command MakeDrainCommand(CLI::App& ember) {
  return MakeCommand(ember, kDrainCommand, AddDrainFlags, RunDrain);
}

int RunDrain(const DrainFlags& flags) {
  auto security = ResolveSecurity(flags.security);
  if (!security.ok()) return PrintError("drain", security.status(), 2);
  ps::SchedulerClient scheduler(flags.scheduler, *security);
  Status status = scheduler.Drain(flags.server, Millis(10'000));
  if (!status.ok()) return PrintError("drain", status);
  std::printf("draining server %u\n", flags.server);
  std::fflush(stdout);
  if (flags.wait_s == 0) return 0;
  // The partitions it held when asked, moved off as the wait goes on.
  std::optional<ProgressMeter> meter;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(flags.wait_s);
  while (std::chrono::steady_clock::now() < deadline) {
    auto cluster = scheduler.GetClusterStatus(Millis(10'000));
    if (cluster.ok()) {
      for (const ServerStatus& s : cluster->servers) {
        if (s.id != flags.server) continue;
        if (!meter) {
          meter.emplace(ProgressOptions{.label = "draining server " + std::to_string(s.id),
                                        .unit = "partitions",
                                        .total = s.partitions});
        }
        meter->Set(meter->total() - std::min(meter->total(), uint64_t{s.partitions}));
        if (s.partitions == 0) {
          meter->Finish();
          std::printf("server %u holds no partition any more\n", s.id);
          return 0;
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return PrintError("drain", DeadlineExceeded("server " + std::to_string(flags.server) +
                                              " still holds partitions after --wait " +
                                              std::to_string(flags.wait_s) + " s"));
}

}  // namespace ember::app
