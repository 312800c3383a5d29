// `ember cluster`: a whole local cluster from one config: the scheduler, the servers and
// cluster.trainers trainers (--trainers), each its own process on loopback, trainer r reading
// share r of the data. It returns 0 when every trainer succeeded (else the first failing
// trainer's code) and tears every process down once the trainers are done, when the scheduler or
// a server dies, or on SIGINT/SIGTERM; the children also get SIGTERM from the kernel if this
// process dies, so none is left orphaned. A trainer that fails leaves the others running: the
// scheduler's train.on_trainer_failure policy decides whether they go on without it.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "app/command_support.h"
#include "app/commands.h"
#include "app/process_setup.h"
#include "common/child_process.h"
#include "ps/server/server.h"

namespace ember::app {
namespace {

using std::chrono::milliseconds;

std::string SelfExecutable() {
  std::error_code error;
  auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : path.string();
}

std::string ReadFirstLine(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return "";
  char buffer[512] = {0};
  std::string line = std::fgets(buffer, sizeof(buffer), file) ? buffer : "";
  std::fclose(file);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

// A temporary folder for the scheduler's endpoint file, removed on scope exit.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    std::string pattern = std::filesystem::temp_directory_path().string() + "/ember_cluster_XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace

int ClusterCommand(int argc, char** argv) {
  std::vector<FlagSpec> known = {
      {"config", "FILE", "job config (YAML): cluster shape, tables, model, data, train"},
      {"steps", "N", "override train.steps"},
      {"epochs", "N", "override train.epochs (interaction data)"},
      {"batch-size", "N", "override train.batch_size"},
      {"backend", "KIND", "override train.backend: cpu, cuda or auto"},
      {"wire-fp16", "", "rows and gradients travel as fp16 (train.wire_fp16)"},
      {"pipeline", "", "pull the next step's rows while this step computes (train.pipeline)"},
      {"data-root", "DIR", "folder that relative data paths resolve against (default: the config's)"},
      {"data-dir", "DIR",
       "servers keep their rows in RocksDB under DIR/server-I (needed for "
       "cluster.server_memory_budget; a fresh directory per run)"},
      {"memory-budget", "BYTES", "override cluster.server_memory_budget (needs --data-dir)"},
      {"summary-json", "FILE", "the trainers also write their final figures here as JSON "
                               "(trainer r > 0 to FILE.r)"},
      {"checkpoint-every", "N", "override cluster.checkpoint_every: a checkpoint every N steps"},
      {"checkpoint-dir", "DIR", "override cluster.checkpoint_dir: where periodic checkpoints go"},
      {"restore", "DIR", "resume from a checkpoint (or the newest complete one under DIR) into "
                         "this cluster, whatever its server count"},
  };
  for (FlagSpec& spec : SyncFlagSpecs()) known.push_back(std::move(spec));
  int exit_code = 0;
  auto flags = ParseCommandFlags(
      argc, argv, "ember cluster --config FILE [options]",
      "Starts a local cluster (scheduler, cluster.servers servers, cluster.trainers trainers; each "
      "its own process on loopback), trains, prints the trainers' summaries, and stops everything.",
      known, &exit_code);
  if (!flags) return exit_code;
  SetUpLogging("cluster");
  auto config = LoadConfigFlag(*flags, "cluster");
  if (!config) return 2;
  const std::string self = SelfExecutable();
  const std::string config_path = flags->Get("config");
  ScratchDir scratch;
  if (self.empty() || scratch.path.empty()) {
    std::fprintf(stderr, "ember cluster: cannot locate the ember binary or a temporary folder\n");
    return 1;
  }
  std::atomic<bool> stop{false};
  StopOnSignals(&stop);

  const std::string endpoint_file = scratch.path + "/scheduler_endpoint";
  // The sync overrides go to every role, so that all agree on the mode and the trainer count.
  std::vector<std::string> sync_args;
  for (const char* passed : kSyncFlags) {
    if (flags->Has(passed)) {
      sync_args.push_back(std::string("--") + passed);
      sync_args.push_back(flags->Get(passed));
    }
  }
  std::vector<std::string> scheduler_args = {self, "scheduler", "--config", config_path,
                                             "--endpoint-file", endpoint_file};
  scheduler_args.insert(scheduler_args.end(), sync_args.begin(), sync_args.end());
  for (const char* passed : {"checkpoint-every", "checkpoint-dir"}) {
    if (flags->Has(passed)) {
      scheduler_args.insert(scheduler_args.end(), {std::string("--") + passed, flags->Get(passed)});
    }
  }
  auto scheduler = std::make_unique<ChildProcess>(scheduler_args);
  std::vector<std::unique_ptr<ChildProcess>> servers;
  std::vector<std::unique_ptr<ChildProcess>> trainers;
  auto stop_all = [&] {
    for (auto& trainer : trainers) trainer->Stop();
    for (auto& server : servers) server->Signal(SIGTERM);
    for (auto& server : servers) server->Stop();
    scheduler->Stop();
  };

  // Wait for the scheduler to report where it listens.
  std::string scheduler_endpoint;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (scheduler_endpoint.empty()) {
    if (stop.load() || !scheduler->running() || std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "ember cluster: the scheduler did not start\n");
      stop_all();
      return 1;
    }
    std::this_thread::sleep_for(milliseconds(20));
    scheduler_endpoint = ReadFirstLine(endpoint_file);
  }
  for (uint32_t i = 0; i < config->cluster.servers; ++i) {
    std::vector<std::string> server_args = {self, "server", "--config", config_path,
                                            "--scheduler", scheduler_endpoint};
    if (flags->Has("data-dir")) {
      server_args.insert(server_args.end(), {"--data-dir", flags->Get("data-dir") + "/server-" +
                                                               std::to_string(i)});
    }
    if (flags->Has("memory-budget")) {
      server_args.insert(server_args.end(), {"--memory-budget", flags->Get("memory-budget")});
    }
    if (config->cluster.server_threads == 0) {
      // The servers share this machine's cores.
      server_args.insert(server_args.end(),
                         {"--threads", std::to_string(ps::DefaultWorkerThreads(
                                           config->cluster.servers))});
    }
    servers.push_back(std::make_unique<ChildProcess>(server_args));
  }
  std::vector<std::string> trainer_args = {self, "train", "--config", config_path, "--scheduler",
                                           scheduler_endpoint};
  for (const char* passed : {"steps", "epochs", "batch-size", "backend", "data-root", "restore"}) {
    if (flags->Has(passed)) {
      trainer_args.push_back(std::string("--") + passed);
      trainer_args.push_back(flags->Get(passed));
    }
  }
  for (const char* passed : {"pipeline", "wire-fp16"}) {
    if (flags->Has(passed)) trainer_args.push_back(std::string("--") + passed);
  }
  trainer_args.insert(trainer_args.end(), sync_args.begin(), sync_args.end());
  const uint32_t num_trainers = config->cluster.trainers;
  for (uint32_t rank = 0; rank < num_trainers; ++rank) {
    std::vector<std::string> args = trainer_args;
    args.insert(args.end(), {"--rank", std::to_string(rank)});
    if (flags->Has("summary-json")) {
      args.push_back("--summary-json");
      args.push_back(flags->Get("summary-json") + (rank ? "." + std::to_string(rank) : ""));
    }
    trainers.push_back(std::make_unique<ChildProcess>(args));
  }

  int trainers_code = 0;
  for (;;) {
    if (stop.load()) {
      spdlog::warn("stopping the cluster on a signal");
      stop_all();
      return 130;
    }
    bool any_running = false;
    for (uint32_t rank = 0; rank < num_trainers; ++rank) {
      if (trainers[rank]->running()) {
        any_running = true;
      } else if (trainers[rank]->exit_code() != 0 && trainers_code == 0) {
        trainers_code = trainers[rank]->exit_code();
        if (num_trainers > 1) {
          spdlog::error("trainer {} exited with code {}", rank, trainers_code);
        }
      }
    }
    if (!any_running) {
      stop_all();
      return trainers_code;
    }
    if (!scheduler->running()) {
      spdlog::error("the scheduler exited (code {}); stopping the cluster", scheduler->exit_code());
      stop_all();
      return 1;
    }
    for (size_t i = 0; i < servers.size(); ++i) {
      if (!servers[i]->running()) {
        spdlog::error("server process {} exited (code {}); stopping the cluster", i,
                      servers[i]->exit_code());
        stop_all();
        return 1;
      }
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
}

}  // namespace ember::app
