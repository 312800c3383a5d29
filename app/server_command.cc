// `ember server`: runs one parameter server until SIGINT or SIGTERM.
#include <optional>

#include "app/commands.h"
#include "app/config_flags.h"
#include "app/logging.h"
#include "app/metrics_flags.h"
#include "app/process_setup.h"
#include "common/file_io.h"
#include "ps/server/server.h"
#include "ps/server/server_metrics.h"

namespace ember::app {
namespace {

constexpr CommandText kServerCommand = {
    .name = "server",
    .summary = "run one parameter server",
    .usage = "ember server --scheduler ENDPOINT [options]",
    .description =
        "Runs one parameter server: it registers with the scheduler, hosts the partitions it is "
        "given and serves pulls and pushes.",
};

void AddServerFlags(CLI::App* command, ServerFlags* flags) {
  AddSchedulerEndpointFlag(command, &flags->scheduler,
                           "the scheduler's endpoint (default: cluster.scheduler)");
  AddConfigFlags(command, &flags->config, /*required=*/false);
  AddValue(command, "--bind", &flags->bind, "ENDPOINT",
           "data socket address (default: cluster.server_bind)");
  AddValue(command, "--advertise", &flags->advertise, "HOST[:PORT]",
           "what the scheduler and clients connect to, when not the bind address (default: "
           "cluster.server_advertise; for a wildcard bind, this machine's host name)");
  AddCount(command, "--threads", &flags->threads, "N",
           "worker threads (default: cluster.server_threads, or the cores less one)");
  const std::string storage = "storage";
  AddValue(command, "--data-dir", &flags->data_dir, "DIR",
           "keep rows in a RocksDB instance here and come back with them after a restart")
      ->group(storage);
  AddCount(command, "--memory-budget", &flags->memory_budget, "BYTES",
           "bytes of rows kept in memory, the rest on disk; needs --data-dir (default: "
           "cluster.server_memory_budget, 0 = no limit)")
      ->group(storage);
  AddCount(command, "--cold-file-bytes", &flags->cold_file_bytes, "BYTES",
           "with --memory-budget: disk bytes of the files that keep rows evicted from memory for "
           "fast reads, beside RocksDB (default: four times the memory budget, 0 = none)")
      ->group(storage);
  AddValue(command, "--durability", &flags->durability, "MODE",
           "with --data-dir: ack (a push is in the log before its ack), sync (and fsynced) or "
           "flush (rows reach disk on eviction and clean shutdown) (default: "
           "cluster.server_durability)")
      ->check(CLI::IsMember({"ack", "sync", "flush"}))
      ->group(storage);
  const std::string joining = "joining a running cluster";
  command
      ->add_flag("--join", flags->join,
                 "join a running cluster: the scheduler moves a fair share of partitions here")
      ->group(joining);
  AddCount(command, "--move-bandwidth", &flags->move_bandwidth, "BYTES",
           "pace the partition copies this server receives (bytes/s; default: unpaced)")
      ->group(joining);
  AddSecurityFlags(command, &flags->security, /*can_bind=*/true);
  AddMetricsBindFlag(command, &flags->metrics_bind, "metrics.servers");
}

}  // namespace

Command MakeServerCommand(CLI::App& ember) {
  return MakeCommand(ember, kServerCommand, AddServerFlags, RunServer);
}

int RunServer(const ServerFlags& flags) {
  SetUpLogging("server");
  local::ClusterShape shape;
  local::SecurityConfig security_config;
  local::MetricsConfig metrics_config;
  Limits limits;
  if (!flags.config.path.empty()) {
    auto config = LoadConfig(flags.config);
    if (!config.ok()) return PrintError("server", config.status(), 2);
    shape = config->cluster;
    security_config = config->security;
    metrics_config = config->metrics;
    limits = config->limits;
  }
  ps::ServerOptions options;
  options.scheduler_endpoint = flags.scheduler.value_or(shape.scheduler);
  if (options.scheduler_endpoint.find('*') != std::string::npos) {
    return PrintError("server",
                      InvalidArgument("--scheduler is required (the config's scheduler address '" +
                                      options.scheduler_endpoint + "' is a wildcard)"),
                      2);
  }
  options.bind = flags.bind.value_or(shape.server_bind);
  options.advertise = flags.advertise.value_or(shape.server_advertise);
  options.worker_threads = flags.threads.value_or(shape.server_threads);
  if (!flags.data_dir.empty()) {
    auto data_dir = CanonicalDirectory(flags.data_dir, "--data-dir");
    if (!data_dir.ok()) return PrintError("server", data_dir.status(), 2);
    options.data_dir = std::move(*data_dir);
  }
  auto durability = ps::ParseDurability(flags.durability.value_or(shape.server_durability));
  if (!durability.ok()) return PrintError("server", durability.status(), 2);
  options.durability = *durability;
  options.memory_budget_bytes = flags.memory_budget.value_or(shape.server_memory_budget);
  options.cold_file_bytes = flags.cold_file_bytes;
  auto non_finite = ps::ParseNonFinitePolicy(shape.non_finite_gradients);
  if (!non_finite.ok()) return PrintError("server", non_finite.status(), 2);
  options.policy = ps::ShardPolicy{limits, *non_finite};
  options.join = flags.join;
  options.move_bandwidth = flags.move_bandwidth;
  if (options.memory_budget_bytes != 0 && options.data_dir.empty()) {
    return PrintError("server",
                      InvalidArgument("--memory-budget needs --data-dir (where the rows beyond the "
                                      "budget go)"),
                      2);
  }
  auto security = ResolveSecurity(flags.security, security_config);
  if (!security.ok()) return PrintError("server", security.status(), 2);
  options.security = std::move(*security);
  ps::Server server(std::move(options));
  // Bound before the server starts, so that a port in use fails at once; declared after the
  // server, so that scrapes stop before it goes.
  auto metrics = StartMetrics("server", flags.metrics_bind, metrics_config.servers);
  if (!metrics.ok()) return PrintError("server", metrics.status(), 2);
  return ServeUntilStopped("server", server, [&]() -> Status {
    if (*metrics) (*metrics)->Add(std::make_shared<ps::ServerMetrics>(server.service()));
    return Status::Ok();
  });
}

}  // namespace ember::app
