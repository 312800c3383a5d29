// The `ember` command line on CLI11: each subcommand is a CLI::App whose flags write into the
// command's own struct, plus what every subcommand shares: help laid out as usage, what the
// command does and its flags in groups; errors that name the flag (`unknown flag '--stpes'`);
// integer flags that take decimal digits only; negatable switches (--pipeline / --no-pipeline);
// and the exit codes (0 after --help, 2 for a usage error, each command's own otherwise).
// Everything here runs on main's thread.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace ember::app {

// A subcommand: its flags, and what runs it once they are parsed, returning the exit code
// (0 success, 1 runtime failure, 2 bad usage or config).
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// The root app: `ember --help` lists the subcommands added to it with their summaries.
std::unique_ptr<CLI::App> MakeEmberApp();

// Accepts only decimal digits ("0x10" and "-1" are usage errors naming the flag).
const CLI::Validator& Digits();

// What `ember --help` and `ember <name> --help` say about a subcommand.
struct CommandText {
  const char* name;
  const char* summary;      // its line in `ember --help`
  const char* usage;        // the line after "usage: " in its own help
  const char* description;  // the paragraph under it, above the flags
};

// Adds a subcommand, its help laid out from `text`.
CLI::App* AddCommand(CLI::App& ember, const CommandText& text);

// Adds a subcommand whose flags live in a `Flags` struct (owned by the returned Command):
// `add_flags` binds them, `run` runs the command with their parsed values.
template <typename Flags>
Command MakeCommand(CLI::App& ember, const CommandText& text, void (*add_flags)(CLI::App*, Flags*),
                    int (*run)(const Flags&)) {
  auto flags = std::make_shared<Flags>();
  CLI::App* command = AddCommand(ember, text);
  add_flags(command, flags.get());
  return {command, [flags, run] { return run(*flags); }};
}

// A flag taking a value, shown as `name VALUE_NAME` in the help.
template <typename T>
CLI::Option* AddValue(CLI::App* command, const std::string& name, T* target,
                      const std::string& value_name, const std::string& help) {
  return command->add_option(name, *target, help)->type_name(value_name);
}

// A flag taking an unsigned integer (decimal digits only).
template <typename T>
CLI::Option* AddCount(CLI::App* command, const std::string& name, T* target,
                      const std::string& value_name, const std::string& help) {
  return AddValue(command, name, target, value_name, help)->check(Digits());
}

// --scheduler ENDPOINT: where a command finds the cluster, for every command that takes it.
template <typename T>
CLI::Option* AddSchedulerEndpointFlag(CLI::App* command, T* endpoint,
                                      const std::string& help = "the running cluster's scheduler") {
  return AddValue(command, "--scheduler", endpoint, "ENDPOINT", help);
}

// Parses argv, then runs the subcommand it names and returns its exit code; prints help (0) or
// the usage error and the command's help (2) instead when that is what argv asks for.
int RunCommandLine(CLI::App& ember, const std::vector<Command>& commands, int argc, char** argv);

// --NAME / --no-NAME: `set` receives true or false (the last one given wins); not called when
// neither is given.
CLI::Option* AddSwitch(CLI::App* command, const std::string& name, std::function<void(bool)> set,
                       const std::string& help);

// Prints "ember <command>: <status>" to stderr (LogFinalError) and returns exit_code.
int PrintError(std::string_view command, const Status& status, int exit_code = 1);

}  // namespace ember::app
