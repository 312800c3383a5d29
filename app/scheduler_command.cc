// `ember scheduler`: runs the scheduler until SIGINT or SIGTERM.
#include <spdlog/spdlog.h>

#include <optional>

#include "app/commands.h"
#include "app/config_flags.h"
#include "app/logging.h"
#include "app/metrics_flags.h"
#include "app/process_setup.h"
#include "common/advertised_endpoint.h"
#include "common/file_io.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_metrics.h"

namespace ember::app {
namespace {

constexpr CommandText kSchedulerCommand = {
    .name = "scheduler",
    .summary = "run the scheduler: membership, routing table, barriers",
    .usage = "ember scheduler --config FILE [options]",
    .description =
        "Runs the scheduler: servers and trainers register with it; it owns the routing table "
        "and the barriers.",
};

void AddSchedulerFlags(CLI::App* command, SchedulerFlags* flags) {
  AddConfigFlags(command, &flags->config, /*required=*/true);
  AddValue(command, "--bind", &flags->bind, "ENDPOINT",
           "address to bind (default: cluster.scheduler from the config)");
  AddValue(command, "--advertise", &flags->advertise, "HOST[:PORT]",
           "the address others reach it at, when not the bind address (logged; default: the "
           "bind address, or this machine's host name for a wildcard bind)");
  AddValue(command, "--data-dir", &flags->data_dir, "DIR",
           "keep the scheduler's state here (membership, routing table, moves, clocks, cuts), "
           "so that started again on it the scheduler goes on and the job with it; with a "
           "wildcard --bind port it binds the port it had (default: state in memory only)");
  // Internal: how `ember cluster` learns where its scheduler listens.
  command->add_option("--endpoint-file", flags->endpoint_file)->group("");
  AddSyncFlags(command, &flags->config);
  AddCheckpointFlags(command, &flags->config);
  AddSecurityFlags(command, &flags->security, /*can_bind=*/true);
  AddMetricsBindFlag(command, &flags->metrics_bind, "metrics.scheduler");
}

}  // namespace

Command MakeSchedulerCommand(CLI::App& ember) {
  return MakeCommand(ember, kSchedulerCommand, AddSchedulerFlags, RunScheduler);
}

int RunScheduler(const SchedulerFlags& flags) {
  SetUpLogging("scheduler");
  auto config = LoadConfig(flags.config);
  if (!config.ok()) return PrintError("scheduler", config.status(), 2);
  scheduler::SchedulerOptions options;
  options.bind = flags.bind.value_or(config->cluster.scheduler);
  options.num_servers = config->cluster.servers;
  options.num_partitions = config->cluster.partitions;
  options.tables = config->tables;
  options.sync = config->train.sync;
  options.checkpoints.every = config->cluster.checkpoint_every;
  if (!config->cluster.checkpoint_dir.empty()) {
    auto dir = CanonicalDirectory(config->cluster.checkpoint_dir, "cluster.checkpoint_dir");
    if (!dir.ok()) return PrintError("scheduler", dir.status(), 2);
    options.checkpoints.dir = std::move(*dir);
  }
  options.checkpoints.keep = config->cluster.checkpoint_keep;
  options.checkpoints.chain = config->cluster.checkpoint_base_every;
  auto security = ResolveSecurity(flags.security, config->security);
  if (!security.ok()) return PrintError("scheduler", security.status(), 2);
  options.security = std::move(*security);
  options.limits = config->limits;
  if (!flags.data_dir.empty()) {
    auto data_dir = CanonicalDirectory(flags.data_dir, "--data-dir");
    if (!data_dir.ok()) return PrintError("scheduler", data_dir.status(), 2);
    options.data_dir = std::move(*data_dir);
  }
  scheduler::Scheduler scheduler(std::move(options));
  // Bound before the scheduler starts, so that a port in use fails at once; the loop publishes
  // its state to the collector after every turn.
  auto metrics = StartMetrics("scheduler", flags.metrics_bind, config->metrics.scheduler);
  if (!metrics.ok()) return PrintError("scheduler", metrics.status(), 2);
  if (*metrics) {
    auto collector = std::make_shared<scheduler::SchedulerMetrics>();
    scheduler.set_metrics(collector.get());
    (*metrics)->Add(std::move(collector));
  }
  return ServeUntilStopped("scheduler", scheduler, [&]() -> Status {
    ASSIGN_OR_RETURN(std::string advertised,
                     AdvertisedEndpoint(scheduler.endpoint(), flags.advertise));
    if (advertised != scheduler.endpoint()) {
      spdlog::info("scheduler: servers, trainers and tools connect with --scheduler {}",
                   advertised);
    }
    if (flags.endpoint_file.empty()) return Status::Ok();
    return WriteFileAtomically(flags.endpoint_file, advertised + "\n");
  });
}

}  // namespace ember::app
