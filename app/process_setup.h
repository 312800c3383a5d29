// Process-wide set-up shared by the subcommands: log format and stop signals.
#pragma once

#include <atomic>
#include <string_view>

namespace ember::app {

// Logs go to stderr as "HH:MM:SS.mmm <role> <level> message"; EMBER_LOG_LEVEL (trace, debug,
// info, warn, error) sets the level, info by default.
void SetUpLogging(std::string_view role);

// Makes SIGINT and SIGTERM store true into *flag (an atomic store, safe in a signal handler).
void StopOnSignals(std::atomic<bool>* flag);

}  // namespace ember::app
