// Process-wide set-up shared by the subcommands: the allocator, log format and stop signals.
#pragma once

#include <atomic>
#include <string_view>

namespace ember::app {

// Logs go to stderr as "HH:MM:SS.mmm <role> <level> message"; EMBER_LOG_LEVEL (trace, debug,
// info, warn, error) sets the level, info by default.
void SetUpLogging(std::string_view role);

// Keeps large allocations (message frames of megabytes, made and freed per request) in the heap
// instead of fresh mmaps, so they are reused without page faults and zeroing by the kernel.
void KeepLargeAllocationsInTheHeap();

// Makes SIGINT and SIGTERM store true into *flag (an atomic store, safe in a signal handler).
void StopOnSignals(std::atomic<bool>* flag);

}  // namespace ember::app
