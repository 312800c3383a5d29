// `ember cluster`: a whole local cluster from one config: the scheduler, the servers and one
// trainer, each its own process on loopback. It returns the trainer's exit code and tears every
// process down when the trainer finishes, when any other role dies, or on SIGINT/SIGTERM; the
// children also get SIGTERM from the kernel if this process dies, so none is left orphaned.
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
  const std::vector<FlagSpec> known = {
      {"config", "FILE", "job config (YAML): cluster shape, tables, model, data, train"},
      {"steps", "N", "override train.steps"},
      {"epochs", "N", "override train.epochs (interaction data)"},
      {"batch-size", "N", "override train.batch_size"},
      {"backend", "KIND", "override train.backend: cpu, cuda or auto"},
      {"wire-fp16", "", "rows and gradients travel as fp16 (train.wire_fp16)"},
      {"pipeline", "", "pull the next step's rows while this step computes (train.pipeline)"},
      {"data-root", "DIR", "folder that relative data paths resolve against (default: the config's)"},
      {"summary-json", "FILE", "the trainer also writes its final figures here as JSON"},
  };
  int exit_code = 0;
  auto flags = ParseCommandFlags(
      argc, argv, "ember cluster --config FILE [options]",
      "Starts a local cluster (scheduler, cluster.servers servers, one trainer; each its own "
      "process on loopback), trains, prints the trainer's summary, and stops everything.",
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
  auto scheduler = std::make_unique<ChildProcess>(std::vector<std::string>{
      self, "scheduler", "--config", config_path, "--endpoint-file", endpoint_file});
  std::vector<std::unique_ptr<ChildProcess>> servers;
  std::unique_ptr<ChildProcess> trainer;
  auto stop_all = [&] {
    if (trainer) trainer->Stop();
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
    servers.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
        self, "server", "--config", config_path, "--scheduler", scheduler_endpoint}));
  }
  std::vector<std::string> trainer_args = {self, "train", "--config", config_path, "--scheduler",
                                           scheduler_endpoint};
  for (const char* passed :
       {"steps", "epochs", "batch-size", "backend", "data-root", "summary-json"}) {
    if (flags->Has(passed)) {
      trainer_args.push_back(std::string("--") + passed);
      trainer_args.push_back(flags->Get(passed));
    }
  }
  for (const char* passed : {"pipeline", "wire-fp16"}) {
    if (flags->Has(passed)) trainer_args.push_back(std::string("--") + passed);
  }
  trainer = std::make_unique<ChildProcess>(trainer_args);

  for (;;) {
    if (stop.load()) {
      spdlog::warn("stopping the cluster on a signal");
      stop_all();
      return 130;
    }
    if (!trainer->running()) {
      const int code = trainer->exit_code();
      stop_all();
      return code;
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
