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
