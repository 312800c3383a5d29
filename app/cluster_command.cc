// `ember cluster`: a whole local cluster from one config: the scheduler, the servers and
// cluster.trainers trainers (--trainers), each its own process on loopback, trainer r reading
// share r of the data. Every process loads the same config with the same overrides (--set and the
// named shorthands are passed on as --set). It returns 0 when every trainer succeeded (else the
// first failing trainer's code) and tears every process down once the trainers are done, when the
// scheduler or a server dies, or on SIGINT/SIGTERM; the children also get SIGTERM from the kernel
// if this process dies, so none is left orphaned. A trainer that fails leaves the others running:
// the scheduler's train.on_trainer_failure policy decides whether they go on without it.
//
// The cluster is authenticated: it makes throwaway CurveZMQ keys (scheduler, each server, each
// trainer, and an admin key for `ember status` and friends) in a private temporary folder, which
// becomes the keyring every process trusts, and removes them at the end.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/config_flags.h"
#include "app/logging.h"
#include "app/process_setup.h"
#include "common/child_process.h"
#include "common/file_io.h"
#include "common/scratch_directory.h"
#include "common/transport_security.h"
#include "local/security_config.h"
#include "ps/client/scheduler_client.h"
#include "ps/server/server.h"

namespace ember::app {
namespace {

constexpr CommandText kClusterCommand = {
    .name = "cluster",
    .summary = "start a local cluster (scheduler, servers, trainer) from a config and train",
    .usage = "ember cluster --config FILE [options]",
    .description =
        "Starts a local cluster (scheduler, cluster.servers servers, cluster.trainers trainers; "
        "each its own process on loopback), trains, prints the trainers' summaries, and stops "
        "everything. Every process loads the config with the same overrides. With --serve it "
        "starts no trainers and serves until SIGINT or SIGTERM, for clients started apart.",
};

void AddClusterFlags(CLI::App* command, ClusterFlags* flags) {
  AddConfigFlags(command, &flags->config, /*required=*/true);
  AddDataRootFlag(command, &flags->config);
  AddTrainingFlags(command, &flags->config);
  AddSyncFlags(command, &flags->config);
  AddValue(command, "--data-dir", &flags->data_dir, "DIR",
           "servers keep their rows in RocksDB under DIR/server-I (needed for "
           "cluster.server_memory_budget; a fresh directory per run)")
      ->group("servers");
  AddMemoryBudgetFlag(command, &flags->config);
  AddCheckpointFlags(command, &flags->config);
  AddValue(command, "--restore", &flags->restore, "DIR",
           "resume from a checkpoint (or the newest complete one under DIR) into this cluster, "
           "whatever its server count")
      ->group("checkpoints");
  AddValue(command, "--summary-json", &flags->summary_json, "FILE",
           "the trainers also write their final figures here as JSON (trainer r > 0 to FILE.r)")
      ->group("output");
  AddValue(command, "--log-jsonl", &flags->log_jsonl, "FILE",
           "the trainers write their progress windows and summary here, one JSON object a line "
           "(trainer r > 0 to FILE.r)")
      ->group("output");
  command->add_flag("--serve", flags->serve,
                    "start the scheduler and servers only and serve until SIGINT/SIGTERM")
      ->group("serving");
  AddValue(command, "--info-file", &flags->info_file, "FILE",
           "once every server serves, write where clients connect (scheduler endpoint, admin "
           "key, scheduler key) to FILE as JSON")
      ->group("serving");
}

}  // namespace

Command MakeClusterCommand(CLI::App& ember) {
  return MakeCommand(ember, kClusterCommand, AddClusterFlags, RunCluster);
}

namespace {

using std::chrono::milliseconds;


std::string ReadFirstLine(const std::string& path) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (file == nullptr) return "";
  char buffer[512] = {0};
  std::string line = std::fgets(buffer, sizeof(buffer), file) ? buffer : "";
  std::fclose(file);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

// The cluster's processes; the destructor stops whichever still run.
struct Processes {
  std::unique_ptr<ChildProcess> scheduler;
  std::vector<std::unique_ptr<ChildProcess>> servers;
  std::vector<std::unique_ptr<ChildProcess>> trainers;

  ~Processes() {
    for (auto& trainer : trainers) trainer->Stop();
    for (auto& server : servers) server->Signal(SIGTERM);
    for (auto& server : servers) server->Stop();
    if (scheduler) scheduler->Stop();
  }
};

// Makes the cluster's throwaway keys in `dir`: a keyring of scheduler, server-I, trainer-R, admin
// and reader key files.
Status MakeThrowawayKeys(const std::string& dir, uint32_t servers, uint32_t trainers) {
  std::vector<std::string> names = {"scheduler", "admin", "reader"};
  for (uint32_t i = 0; i < servers; ++i) names.push_back("server-" + std::to_string(i));
  for (uint32_t r = 0; r < trainers; ++r) names.push_back("trainer-" + std::to_string(r));
  for (const std::string& name : names) RETURN_IF_ERROR(WriteKeyFiles(dir, name).status());
  return Status::Ok();
}

// Waits (30 s at most) for the scheduler to write where it listens; empty if it did not.
std::string WaitForEndpoint(ChildProcess& scheduler, const std::string& endpoint_file,
                            const std::atomic<bool>& stop) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string endpoint;
  while (endpoint.empty() && !stop.load() && scheduler.running() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
    endpoint = ReadFirstLine(endpoint_file);
  }
  return endpoint;
}

// Waits (60 s at most) until the cluster formed: every server registered and the routing table
// is ready.
Status WaitUntilServing(const Processes& processes, const std::string& endpoint,
                        const TransportSecurity& admin, const std::atomic<bool>& stop) {
  ps::SchedulerClient scheduler(endpoint, admin);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    auto routing = scheduler.GetRouting(Millis(2'000));
    if (routing.ok()) return Status::Ok();
    if (stop.load()) return Aborted("stopped on a signal before the cluster formed");
    for (size_t i = 0; i < processes.servers.size(); ++i) {
      if (!processes.servers[i]->running()) {
        return Unavailable("server process " + std::to_string(i) + " exited (code " +
                           std::to_string(processes.servers[i]->exit_code()) + ")");
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return routing.status().WithContext("the cluster did not form within 60 s");
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
}

// What a client needs to connect to a serving cluster, as JSON.
std::string ConnectionInfo(const std::string& endpoint, const std::string& keys,
                           uint32_t servers) {
  nlohmann::json info = {{"scheduler", endpoint},
                         {"key", keys + "/admin.key"},
                         {"reader_key", keys + "/reader.key"},
                         {"scheduler_key", keys + "/scheduler.pub"},
                         {"servers", servers},
                         {"pid", ::getpid()}};
  return info.dump(2) + "\n";
}

// Watches the processes until the trainers are done (their first failing exit code, else 0),
// the scheduler or a server exits (1), or `stop` is set (130; 0 when serving, where a signal is
// the normal end).
int Supervise(Processes& processes, const std::atomic<bool>& stop, bool serve) {
  const size_t num_trainers = processes.trainers.size();
  int trainers_code = 0;
  for (;;) {
    if (stop.load()) {
      spdlog::warn("stopping the cluster on a signal");
      return serve ? 0 : 130;
    }
    bool any_running = false;
    for (size_t rank = 0; rank < num_trainers; ++rank) {
      ChildProcess& trainer = *processes.trainers[rank];
      if (trainer.running()) {
        any_running = true;
      } else if (trainer.exit_code() != 0 && trainers_code == 0) {
        trainers_code = trainer.exit_code();
        if (num_trainers > 1) spdlog::error("trainer {} exited with code {}", rank, trainers_code);
      }
    }
    if (!any_running && !serve) return trainers_code;
    if (!processes.scheduler->running()) {
      spdlog::error("the scheduler exited (code {}); stopping the cluster",
                    processes.scheduler->exit_code());
      return 1;
    }
    for (size_t i = 0; i < processes.servers.size(); ++i) {
      if (!processes.servers[i]->running()) {
        spdlog::error("server process {} exited (code {}); stopping the cluster", i,
                      processes.servers[i]->exit_code());
        return 1;
      }
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
}

}  // namespace

namespace {

// The flags of server `i` beyond the config's: where it finds the scheduler, its data directory,
// its metrics port (PORT+i: the servers share this machine) and its share of the cores.
Result<std::vector<std::string>> ServerArgs(const local::ClusterConfig& config,
                                            const ClusterFlags& flags, const std::string& endpoint,
                                            uint32_t i) {
  std::vector<std::string> args = {"--scheduler", endpoint};
  if (!flags.data_dir.empty()) {
    args.insert(args.end(), {"--data-dir", flags.data_dir + "/server-" + std::to_string(i)});
  }
  if (config.metrics.servers) {
    auto metrics = config.metrics.servers->Offset(i);
    if (!metrics.ok()) return metrics.status().WithContext("metrics.servers");
    args.insert(args.end(), {"--metrics-bind", metrics->ToString()});
  }
  if (config.cluster.server_threads == 0) {
    args.insert(args.end(),
                {"--threads", std::to_string(ps::DefaultWorkerThreads(config.cluster.servers))});
  }
  return args;
}

// The flags of trainer `rank` beyond the config's; its output files get the rank as a suffix
// (none for rank 0).
std::vector<std::string> TrainerArgs(const ClusterFlags& flags, const std::string& endpoint,
                                     uint32_t rank) {
  std::vector<std::string> args = {"--scheduler", endpoint, "--rank", std::to_string(rank)};
  if (!flags.config.data_root.empty()) {
    args.insert(args.end(), {"--data-root", flags.config.data_root});
  }
  if (!flags.restore.empty()) args.insert(args.end(), {"--restore", flags.restore});
  const std::string rank_suffix = rank ? "." + std::to_string(rank) : "";
  if (!flags.summary_json.empty()) {
    args.insert(args.end(), {"--summary-json", flags.summary_json + rank_suffix});
  }
  if (!flags.log_jsonl.empty()) {
    args.insert(args.end(), {"--log-jsonl", flags.log_jsonl + rank_suffix});
  }
  return args;
}

}  // namespace

int RunCluster(const ClusterFlags& flags) {
  SetUpLogging("cluster");
  auto config = LoadConfig(flags.config);
  if (!config.ok()) return PrintError("cluster", config.status(), 2);
  if (Status trains = local::RequireTraining(*config); !flags.serve && !trains.ok()) {
    return PrintError("cluster", trains, 2);
  }
  if (flags.serve &&
      (!flags.restore.empty() || !flags.summary_json.empty() || !flags.log_jsonl.empty())) {
    return PrintError("cluster", InvalidArgument("--restore, --summary-json and --log-jsonl are "
                                                 "the trainers' and --serve starts none"), 2);
  }
  const std::string self = SelfExecutable();
  if (self.empty()) return PrintError("cluster", Internal("cannot locate the ember binary"));
  // The scheduler's endpoint file and the keys.
  auto scratch_dir = ScratchDirectory::Make("ember_local_");
  if (!scratch_dir.ok()) return PrintError("cluster", scratch_dir.status());
  const ScratchDirectory& scratch = **scratch_dir;
  std::atomic<bool> stop{false};
  StopOnSignals(&stop);

  const std::string keys = scratch.path() + "/keys";
  if (Status made = MakeThrowawayKeys(keys, config->cluster.servers, config->cluster.trainers);
      !made.ok()) {
    return PrintError("cluster", made.WithContext("making the cluster's keys"));
  }
  // Every process loads the same config with the same overrides, and trusts the keyring.
  ConfigFlags child_config = flags.config;
  child_config.shorthands.push_back({"security.keyring", keys});
  child_config.shorthands.push_back({"security.scheduler_key", keys + "/scheduler.pub"});
  const std::vector<std::string> config_args = ConfigArgs(child_config);
  auto command = [&](const char* role, std::vector<std::string> args, const std::string& key) {
    args.insert(args.begin(), config_args.begin(), config_args.end());
    args.insert(args.begin(), {self, role, "--key", keys + "/" + key + ".key"});
    return args;
  };
  const std::string endpoint_file = scratch.path() + "/scheduler_endpoint";
  Processes processes;
  processes.scheduler =
      std::make_unique<ChildProcess>(
          command("scheduler", {"--endpoint-file", endpoint_file}, "scheduler"));
  const std::string endpoint = WaitForEndpoint(*processes.scheduler, endpoint_file, stop);
  if (endpoint.empty()) {
    return PrintError("cluster", Unavailable("the scheduler did not start"));
  }
  spdlog::info("cluster: authenticated with throwaway keys; while it runs, tools connect with "
               "--scheduler {0} --key {1}/admin.key --scheduler-key {1}/scheduler.pub (lookups "
               "with --key {1}/reader.key)", endpoint, keys);
  for (uint32_t i = 0; i < config->cluster.servers; ++i) {
    auto args = ServerArgs(*config, flags, endpoint, i);
    if (!args.ok()) return PrintError("cluster", args.status(), 2);
    processes.servers.push_back(
        std::make_unique<ChildProcess>(command("server", *args, "server-" + std::to_string(i))));
  }
  if (flags.serve) {
    auto admin = local::BuildTransportSecurity(
        {.key_file = keys + "/admin.key", .scheduler_key = keys + "/scheduler.pub"}, "", false);
    if (!admin.ok()) return PrintError("cluster", admin.status());
    if (Status serving = WaitUntilServing(processes, endpoint, *admin, stop); !serving.ok()) {
      return PrintError("cluster", serving);
    }
    if (!flags.info_file.empty()) {
      Status written = WriteFileAtomically(
          flags.info_file, ConnectionInfo(endpoint, keys, config->cluster.servers));
      if (!written.ok()) return PrintError("cluster", written);
    }
    spdlog::info("cluster: {} servers serving; stop with SIGINT or SIGTERM",
                 config->cluster.servers);
    return Supervise(processes, stop, /*serve=*/true);
  }
  for (uint32_t rank = 0; rank < config->cluster.trainers; ++rank) {
    // Rank 0 restores the servers' rows (a checkpoint, or the best state or initial rows of early
    // stopping), which takes an admin key.
    const bool restores = !flags.restore.empty() || config->train.early_stopping.reloads_rows();
    const std::string key = restores && rank == 0 ? "admin" : "trainer-" + std::to_string(rank);
    processes.trainers.push_back(
        std::make_unique<ChildProcess>(command("train", TrainerArgs(flags, endpoint, rank), key)));
  }
  return Supervise(processes, stop, /*serve=*/false);
}

}  // namespace ember::app
