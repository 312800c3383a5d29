// `ember drain`: moves every partition off one server of a running cluster; the server exits by
// itself once it holds none (scheduler/shard_moves.h).
#include <cstdio>
#include <thread>

#include "app/commands.h"
#include "common/transport.h"

namespace ember::app {

int RunDrain(const DrainFlags& flags) {
  zmq::context_t context(1);
  RpcChannel scheduler(context, flags.scheduler);
  uint64_t id = scheduler.NextRequestId();
  auto reply = scheduler.Call(id, wire::EncodeDrain({id, 0}, flags.server), Millis(10'000));
  Status status = reply.ok() ? reply->status : reply.status();
  if (!status.ok()) return PrintError("drain", status);
  std::printf("draining server %u\n", flags.server);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(flags.wait_s);
  while (std::chrono::steady_clock::now() < deadline) {
    id = scheduler.NextRequestId();
    auto state = scheduler.Call(id, wire::EncodeClusterStatusRequest({id, 0}), Millis(10'000));
    if (state.ok() && state->status.ok()) {
      if (auto* cluster = std::get_if<wire::ClusterStatus>(&state->body)) {
        for (const wire::ServerStatus& s : cluster->servers) {
          if (s.id == flags.server && s.partitions == 0) {
            std::printf("server %u holds no partition any more\n", s.id);
            return 0;
          }
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return flags.wait_s == 0 ? 0 : 1;
}

}  // namespace ember::app
