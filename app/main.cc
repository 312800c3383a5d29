// ember: the command-line entry point; dispatches to the subcommands.
#include <cstdio>
#include <cstring>

#include "app/commands.h"
#include "app/process_setup.h"

namespace {

constexpr const char* kUsage =
    "usage: ember <command> [options]\n"
    "\n"
    "commands:\n"
    "  cluster    start a local cluster (scheduler, servers, trainer) from a config and train\n"
    "  scheduler  run the scheduler: membership, routing table, barriers\n"
    "  server     run one parameter server\n"
    "  train      run one trainer against a running cluster\n"
    "  bench      drive synthetic pull/push traffic at a cluster and compare with raw ZeroMQ\n"
    "  bench-dense  time the dense two-tower step alone on the configured backend\n"
    "  bench-tier   compare a table over RocksDB with a memory budget against one in memory\n"
    "  checkpoint have a running cluster write a consistent checkpoint\n"
    "  status     a running cluster's servers, partitions, rows and moves\n"
    "  drain      move every partition off a server of a running cluster; it then exits\n"
    "  export     write a checkpoint's tables and dense towers as NumPy .npy files for serving\n"
    "\n"
    "'ember <command> --help' describes a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  ember::app::KeepLargeAllocationsInTheHeap();
  const char* command = argv[1];
  if (std::strcmp(command, "cluster") == 0) return ember::app::ClusterCommand(argc, argv);
  if (std::strcmp(command, "scheduler") == 0) return ember::app::SchedulerCommand(argc, argv);
  if (std::strcmp(command, "server") == 0) return ember::app::ServerCommand(argc, argv);
  if (std::strcmp(command, "train") == 0) return ember::app::TrainCommand(argc, argv);
  if (std::strcmp(command, "bench") == 0) return ember::app::BenchCommand(argc, argv);
  if (std::strcmp(command, "bench-dense") == 0) return ember::app::DenseBenchCommand(argc, argv);
  if (std::strcmp(command, "bench-tier") == 0) return ember::app::TierBenchCommand(argc, argv);
  if (std::strcmp(command, "export") == 0) return ember::app::ExportCommand(argc, argv);
  if (std::strcmp(command, "checkpoint") == 0) return ember::app::CheckpointCommand(argc, argv);
  if (std::strcmp(command, "status") == 0) return ember::app::StatusCommand(argc, argv);
  if (std::strcmp(command, "drain") == 0) return ember::app::DrainCommand(argc, argv);
  std::fprintf(stderr, "ember: unknown command '%s'\n\n%s", command, kUsage);
  return 2;
}
