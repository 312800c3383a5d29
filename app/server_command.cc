// `ember server`: runs one parameter server until SIGINT or SIGTERM.
#include <cstdio>

#include "app/command_support.h"
#include "app/commands.h"
#include "app/process_setup.h"
#include "ps/server/server.h"

namespace ember::app {

int ServerCommand(int argc, char** argv) {
  const std::vector<FlagSpec> known = {
      {"scheduler", "ENDPOINT", "the scheduler's endpoint (default: cluster.scheduler)"},
      {"config", "FILE", "cluster config (YAML) for the defaults below"},
      {"bind", "ENDPOINT", "data socket address (default: cluster.server_bind)"},
      {"threads", "N",
       "worker threads (default: cluster.server_threads, or the cores less one)"},
      {"data-dir", "DIR",
       "keep rows in a RocksDB instance here and come back with them after a restart"},
      {"memory-budget", "BYTES",
       "bytes of rows kept in memory, the rest on disk; needs --data-dir (default: "
       "cluster.server_memory_budget, 0 = no limit)"},
      {"durability", "MODE",
       "with --data-dir: ack (a push is in the log before its ack), sync (and fsynced) or flush "
       "(rows reach disk on eviction and clean shutdown) (default: cluster.server_durability)"},
      {"join", "", "join a running cluster: the scheduler moves a fair share of partitions here"},
      {"move-bandwidth", "BYTES", "pace the partition copies this server receives (bytes/s; "
                                  "default: unpaced)"},
  };
  int exit_code = 0;
  auto flags = ParseCommandFlags(argc, argv, "ember server --scheduler ENDPOINT [options]",
                                 "Runs one parameter server: it registers with the scheduler, "
                                 "hosts the partitions it is given and serves pulls and pushes.",
                                 known, &exit_code);
  if (!flags) return exit_code;
  SetUpLogging("server");
  ClusterShape shape;
  if (flags->Has("config")) {
    auto config = LoadConfigFlag(*flags, "server");
    if (!config) return 2;
    shape = config->cluster;
  }
  ps::ServerOptions options;
  options.scheduler_endpoint = flags->Get("scheduler", shape.scheduler);
  if (options.scheduler_endpoint.find('*') != std::string::npos) {
    std::fprintf(stderr, "ember server: --scheduler is required (the config's scheduler address "
                         "'%s' is a wildcard)\n", options.scheduler_endpoint.c_str());
    return 2;
  }
  options.bind = flags->Get("bind", shape.server_bind);
  auto threads = flags->GetUint("threads");
  if (!threads.ok()) {
    std::fprintf(stderr, "ember server: %s\n", threads.status().ToString().c_str());
    return 2;
  }
  options.worker_threads = threads->value_or(shape.server_threads);
  options.data_dir = flags->Get("data-dir");
  auto budget = flags->GetUint("memory-budget");
  auto durability = ps::ParseDurability(flags->Get("durability", shape.server_durability));
  for (const Status& status : {budget.status(), durability.status()}) {
    if (!status.ok()) {
      std::fprintf(stderr, "ember server: %s\n", status.ToString().c_str());
      return 2;
    }
  }
  options.memory_budget_bytes = budget->value_or(shape.server_memory_budget);
  options.durability = *durability;
  options.join = flags->Has("join");
  auto bandwidth = flags->GetUint("move-bandwidth");
  if (!bandwidth.ok()) {
    std::fprintf(stderr, "ember server: %s\n", bandwidth.status().ToString().c_str());
    return 2;
  }
  options.move_bandwidth = bandwidth->value_or(0);
  if (options.memory_budget_bytes != 0 && options.data_dir.empty()) {
    std::fprintf(stderr, "ember server: --memory-budget needs --data-dir (where the rows beyond "
                         "the budget go)\n");
    return 2;
  }

  ps::Server server(std::move(options));
  StopOnSignals(server.stop_flag());
  if (Status started = server.Start(); !started.ok()) {
    std::fprintf(stderr, "ember server: %s\n", started.ToString().c_str());
    return 1;
  }
  server.Run();
  return 0;
}

}  // namespace ember::app
