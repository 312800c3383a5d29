// How an `ember` process logs: every subcommand takes --log-level and --log-format; without them
// the environment's EMBER_LOG_LEVEL and EMBER_LOG_FORMAT apply, then the defaults (info, text).
// Logs are text lines on stdout, among the progress lines ("HH:MM:SS.mmm <role> <level> message"),
// or JSON on stderr, one object a line ({"time":"...Z","role":...,"pid":...,"level":...,
// "message":...}, times in UTC), leaving stdout to the progress lines and summary. The chosen
// level and format are put back into the environment, so that the processes a command starts
// (the roles of `ember cluster`, the trials of `ember tune`) log the same way.
#pragma once

#include <spdlog/common.h>

#include <CLI/CLI.hpp>
#include <string_view>

namespace ember::app {

// Adds --log-level and --log-format to a subcommand, in the help's "logging" group. Every
// subcommand shares one process-wide setting: only one of them is parsed.
void AddLoggingFlags(CLI::App* command);

// Applies the level and format (flags, else environment, else `default_level` and text) with
// `role` naming the process in each line. A bad EMBER_LOG_LEVEL or EMBER_LOG_FORMAT is reported
// with a warning naming the variable and the default applies.
void SetUpLogging(std::string_view role,
                  spdlog::level::level_enum default_level = spdlog::level::info);

// Writes `line` to stderr as an error whatever the level: a JSON object like every log line
// once SetUpLogging chose json, else the plain line. Standard output is flushed first, so that
// the error follows what the command printed.
void LogFinalError(std::string_view line);

}  // namespace ember::app
