// Process-wide set-up shared by the subcommands: the allocator and stop signals, and serving until
// a stop signal (logging: app/logging.h).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

#include "app/command_line.h"
#include "common/status.h"

namespace ember::app {

// Keeps large allocations (message frames of megabytes, made and freed per request) in the heap
// instead of fresh mmaps, so they are reused without page faults and zeroing by the kernel.
void KeepLargeAllocationsInTheHeap();

// The path of the running `ember` binary (empty when /proc cannot tell), for starting more of it.
std::string SelfExecutable();

// Makes SIGINT and SIGTERM store true into *flag (an atomic store, safe in a signal handler).
void StopOnSignals(std::atomic<bool>* flag);

// Runs `service` (a ps::Server or a scheduler::Scheduler) until SIGINT or SIGTERM: Start(), then
// `started` when given (to say where it listens, say), then Run(). Returns the exit code, having
// printed why as "ember <command>: ..." when it failed.
template <typename Service>
int ServeUntilStopped(std::string_view command, Service& service,
                      const std::function<Status()>& started = nullptr) {
  StopOnSignals(service.stop_flag());
  if (Status status = service.Start(); !status.ok()) return PrintError(command, status);
  if (started) {
    if (Status status = started(); !status.ok()) return PrintError(command, status);
  }
  service.Run();
  if constexpr (requires { service.failure(); }) {
    // A service that stopped by itself says why.
    if (!service.failure().ok()) return PrintError(command, service.failure());
  }
  return 0;
}

}  // namespace ember::app
