// `ember scheduler`: runs the scheduler until SIGINT or SIGTERM.
#include <cstdio>
#include <filesystem>

#include "app/command_support.h"
#include "app/commands.h"
#include "app/process_setup.h"
#include "scheduler/scheduler.h"

namespace ember::app {

int SchedulerCommand(int argc, char** argv) {
  std::vector<FlagSpec> known = {
      {"config", "FILE", "cluster config (YAML): cluster shape and tables"},
      {"bind", "ENDPOINT", "address to bind (default: cluster.scheduler from the config)"},
      {"endpoint-file", "FILE", "write the bound endpoint here once listening"},
      {"checkpoint-every", "N", "override cluster.checkpoint_every: a checkpoint cut every N steps"},
      {"checkpoint-dir", "DIR", "override cluster.checkpoint_dir: where periodic cuts go"},
  };
  for (FlagSpec& spec : SyncFlagSpecs()) known.push_back(std::move(spec));
  int exit_code = 0;
  auto flags = ParseCommandFlags(argc, argv, "ember scheduler --config FILE [options]",
                                 "Runs the scheduler: servers and trainers register with it; it "
                                 "owns the routing table and the barriers.",
                                 known, &exit_code);
  if (!flags) return exit_code;
  SetUpLogging("scheduler");
  auto config = LoadConfigFlag(*flags, "scheduler");
  if (!config) return 2;

  scheduler::SchedulerOptions options;
  options.bind = flags->Get("bind", config->cluster.scheduler);
  options.num_servers = config->cluster.servers;
  options.num_partitions = config->cluster.partitions;
  options.tables = config->tables;
  options.sync = config->train.sync;
  auto every = flags->GetUint("checkpoint-every");
  if (!every.ok()) {
    std::fprintf(stderr, "ember scheduler: %s\n", every.status().ToString().c_str());
    return 2;
  }
  options.checkpoints.every = every->value_or(config->cluster.checkpoint_every);
  const std::string dir = flags->Get("checkpoint-dir", config->cluster.checkpoint_dir);
  if (!dir.empty()) {
    options.checkpoints.dir = std::filesystem::absolute(dir).lexically_normal().string();
  }
  options.checkpoints.keep = config->cluster.checkpoint_keep;
  scheduler::Scheduler scheduler(std::move(options));
  StopOnSignals(scheduler.stop_flag());
  if (Status started = scheduler.Start(); !started.ok()) {
    std::fprintf(stderr, "ember scheduler: %s\n", started.ToString().c_str());
    return 1;
  }
  if (flags->Has("endpoint-file")) {
    Status written = WriteFileAtomically(flags->Get("endpoint-file"), scheduler.endpoint() + "\n");
    if (!written.ok()) {
      std::fprintf(stderr, "ember scheduler: %s\n", written.ToString().c_str());
      return 1;
    }
  }
  scheduler.Run();
  return 0;
}

}  // namespace ember::app
