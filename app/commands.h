// The `ember` subcommands. Each takes the full argv (argv[1] is the subcommand's name) and
// returns the process exit code: 0 success, 1 runtime failure, 2 bad usage or config.
#pragma once

namespace ember::app {

int SchedulerCommand(int argc, char** argv);
int ServerCommand(int argc, char** argv);
int TrainCommand(int argc, char** argv);
int ClusterCommand(int argc, char** argv);
int BenchCommand(int argc, char** argv);
int DenseBenchCommand(int argc, char** argv);
int TierBenchCommand(int argc, char** argv);
int ExportCommand(int argc, char** argv);
int CheckpointCommand(int argc, char** argv);
int StatusCommand(int argc, char** argv);
int DrainCommand(int argc, char** argv);

}  // namespace ember::app
