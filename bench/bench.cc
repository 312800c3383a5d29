// The data-plane benchmark: the cluster, its clients, the rows, and the three measurements.
#include "bench/bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench/internal/echo_traffic.h"
#include "bench/internal/key_batches.h"
#include "bench/internal/phase.h"
#include "bench/internal/populate.h"
#include "bench/internal/process_usage.h"
#include "bench/internal/request_driver.h"
#include "bench/internal/rounds.h"
#include "bench/internal/row_gather.h"
#include "bench/internal/table_rows.h"
#include "common/usable_cores.h"
#include "embedding/embedding_table.h"
#include "embedding/optimizer.h"
#include "embedding/table_config.h"
#include "local/local_cluster.h"
#include "ps/client/client.h"
#include "scheduler/scheduler.h"

namespace ember::bench {
namespace {

using local::LocalCluster;
using local::LocalClusterOptions;

constexpr size_t kMaxBatchesPerClient = 64;  // distinct key batches a client cycles through

Result<TableSpec> BenchTable(const BenchOptions& config) {
  TableSpec table;
  table.name = config.table;
  table.dim = config.dim;
  table.seed = config.seed;
  ASSIGN_OR_RETURN(table.optimizer.kind, embedding::OptimizerKindFromName(config.optimizer));
  table.optimizer.learning_rate = static_cast<float>(config.learning_rate);
  RETURN_IF_ERROR(embedding::ValidateTableSpec(table));
  return table;
}

// Runs the first client's requests straight against an EmbeddingTable holding the same rows as
// the cluster (the populated keys, in as many partitions), on one thread: the lookup limit.
Status RunLookupPhases(const BenchOptions& config, const std::vector<KeyBatch>& batches,
                       BenchReport* report) {
  ASSIGN_OR_RETURN(TableSpec spec, BenchTable(config));
  embedding::EmbeddingTable table(spec, scheduler::SchedulerOptions().num_partitions);
  std::vector<std::unique_ptr<RequestDriver>> pull, push;
  pull.push_back(std::make_unique<TablePullDriver>(&table, config.keys_per_request));
  push.push_back(std::make_unique<TablePushDriver>(&table, config.keys_per_request));
  RETURN_IF_ERROR(Populate(config, pull).status().WithContext("the lookup table"));
  const std::vector<std::vector<KeyBatch>> first_client_batches = {batches};
  for (auto [drivers, figures] :
       {std::pair{&pull, &report->pull}, std::pair{&push, &report->push}}) {
    Traffic traffic = MakeTraffic("lookups alone", *drivers, first_client_batches);
    RETURN_IF_ERROR(WarmUp(traffic, config.seconds));
    PhaseOutcome phase =
        RunPhase(traffic, {.requests_per_client = config.requests, .seconds = config.seconds});
    RETURN_IF_ERROR(phase.status);
    figures->lookup_keys_per_second = KeysPerSecond(phase);
  }
  return Status::Ok();
}

// The memory figures: rows and bytes per row by the servers' account, the raw bytes of a row and
// its optimizer state, and, when known, the growth of resident memory per row.
Status FillMemory(const BenchOptions& config, ps::Client& client,
                  std::optional<double> resident_growth, MemoryFigures* memory) {
  ASSIGN_OR_RETURN(std::vector<ServerStats> stats, client.Stats());
  uint64_t table_bytes = 0;
  for (const ServerStats& server : stats) {
    for (const TableStats& table : server.tables) {
      if (table.name != config.table) continue;
      memory->rows += table.rows;
      table_bytes += table.bytes;
    }
  }
  if (memory->rows > 0) {
    memory->bytes_per_row = static_cast<double>(table_bytes) / memory->rows;
    if (resident_growth) memory->rss_bytes_per_row = *resident_growth / memory->rows;
  }
  ASSIGN_OR_RETURN(const TableSpec* table, client.FindTable(config.table));
  ASSIGN_OR_RETURN(embedding::RowOptimizer optimizer,
                   embedding::RowOptimizer::Create(table->optimizer, table->dim));
  memory->raw_bytes_per_row = (table->dim + optimizer.state_floats()) * sizeof(float);
  return Status::Ok();
}

// Everything but the lookups alone: starts the cluster (unless --scheduler names one), the
// clients and the echo peers, creates the rows, runs the rounds and fills the report.
Status RunClusterRounds(BenchOptions& config, const std::vector<std::vector<KeyBatch>>& batches,
                        BenchReport* report) {
  std::unique_ptr<LocalCluster> cluster;
  std::string scheduler_endpoint = config.scheduler;
  // The bench's messages may be larger than the default limit allows.
  ps::ShardPolicy policy;
  policy.limits.keys_per_message =
      std::max(policy.limits.keys_per_message, config.max_keys_per_message);
  if (scheduler_endpoint.empty()) {
    ASSIGN_OR_RETURN(TableSpec table, BenchTable(config));
    cluster = std::make_unique<LocalCluster>(
        std::vector<TableSpec>{table},
        LocalClusterOptions{.num_servers = config.servers,
                            .num_partitions = scheduler::SchedulerOptions().num_partitions,
                            .worker_threads = config.server_threads,
                            .policy = policy,
                            .authenticate = config.curve});
    RETURN_IF_ERROR(cluster->status());
    scheduler_endpoint = cluster->scheduler_endpoint();
  }

  std::vector<std::unique_ptr<ps::Client>> clients;
  for (uint32_t c = 0; c < config.clients; ++c) {
    ps::ClientOptions options;
    options.scheduler_endpoint = scheduler_endpoint;
    options.name = "bench-" + std::to_string(getpid()) + "-" + std::to_string(c);
    options.request_timeout = kRequestTimeout;
    options.max_keys_per_message = config.max_keys_per_message;
    options.limits = policy.limits;
    options.security = cluster ? cluster->client_security() : config.security;
    ASSIGN_OR_RETURN(auto client, ps::Client::Connect(std::move(options)));
    clients.push_back(std::move(client));
  }
  if (!cluster) {
    // A running cluster decides the row width and the server count; the thread count is unknown.
    ASSIGN_OR_RETURN(const TableSpec* table, clients.front()->FindTable(config.table));
    config.dim = table->dim;
    config.optimizer = embedding::OptimizerKindName(table->optimizer.kind);
    config.learning_rate = table->optimizer.learning_rate;
    config.servers = static_cast<uint32_t>(clients.front()->routing().servers.size());
    config.server_threads = 0;
  }
  report->config = config;

  std::vector<std::unique_ptr<RequestDriver>> pull_drivers, push_drivers;
  for (auto& client : clients) {
    pull_drivers.push_back(std::make_unique<EmberPullDriver>(client.get(), config.table,
                                                             config.keys_per_request, config.dim));
    push_drivers.push_back(std::make_unique<EmberPushDriver>(client.get(), config.table,
                                                             config.keys_per_request, config.dim));
  }
  // The transport limit: echo peers in this process for the whole run, idle while ember runs
  // (as the cluster is while they answer), started before resident memory is first measured.
  ASSIGN_OR_RETURN(EchoTraffic echo_pull, StartEchoTraffic(config, EchoOperation::kPull));
  ASSIGN_OR_RETURN(EchoTraffic echo_push, StartEchoTraffic(config, EchoOperation::kPush));
  const uint64_t resident_before = ResidentBytes();
  ASSIGN_OR_RETURN(report->populate, Populate(config, pull_drivers));
  OperationRounds pull{.ember = MakeTraffic("pull", pull_drivers, batches),
                       .raw = MakeTraffic("raw pull (echo traffic)", echo_pull.drivers, batches),
                       .raw_thread_ids = echo_pull.peer_thread_ids};
  OperationRounds push{.ember = MakeTraffic("push", push_drivers, batches),
                       .raw = MakeTraffic("raw push (echo traffic)", echo_push.drivers, batches),
                       .raw_thread_ids = echo_push.peer_thread_ids};
  RETURN_IF_ERROR(RunRounds(config, cluster.get(), &pull, &push));
  const uint64_t resident_after = ResidentBytes();
  FillOperation(pull, config.dim, cluster != nullptr, &report->pull);
  FillOperation(push, config.dim, cluster != nullptr, &report->push);

  std::optional<double> resident_growth;
  if (cluster) {
    resident_growth = resident_after > resident_before
                          ? static_cast<double>(resident_after - resident_before)
                          : 0.0;
  }
  return FillMemory(config, *clients.front(), resident_growth, &report->memory);
}

// The memory limit: a gather from as many rows as were created, as wide as the table stores them,
// with the first client's keys; then the table's own rows, copied and updated. Each for a quarter
// of the time of an operation (0.5 to 4 s).
Status MeasureMemoryLimits(const BenchOptions& config, const std::vector<KeyBatch>& batches,
                           BenchReport* report) {
  ASSIGN_OR_RETURN(TableSpec spec, BenchTable(config));
  ASSIGN_OR_RETURN(embedding::RowOptimizer optimizer,
                   embedding::RowOptimizer::Create(spec.optimizer, spec.dim));
  const double seconds = std::clamp(config.seconds / 4, 0.5, 4.0);
  const uint64_t rows = config.populate > 0 ? config.populate : config.vocabulary;
  ASSIGN_OR_RETURN(report->gather,
                   MeasureRowGather(rows, spec.dim + optimizer.state_floats(), spec.dim, batches,
                                    seconds, /*rounds=*/3));
  ASSIGN_OR_RETURN(report->table_rows,
                   MeasureTableRows(config, spec, rows, scheduler::SchedulerOptions().num_partitions,
                                    batches, seconds, /*rounds=*/3));
  return Status::Ok();
}

}  // namespace

Result<BenchReport> RunBench(BenchOptions config) {
  RETURN_IF_ERROR(CheckBenchOptions(config));
  BenchReport report;
  report.cores = UsableCores();
  const size_t batches_per_client =
      std::min<size_t>(kMaxBatchesPerClient, size_t{config.requests} + kWarmupRequests);
  std::vector<std::vector<KeyBatch>> batches;
  for (uint32_t c = 0; c < config.clients; ++c) {
    batches.push_back(MakeKeyBatches(config, c, batches_per_client));
  }
  RETURN_IF_ERROR(RunClusterRounds(config, batches, &report));
  // The lookups alone, with the cluster and the echo peers gone so they do not share the machine.
  if (config.scheduler.empty()) {
    RETURN_IF_ERROR(RunLookupPhases(config, batches.front(), &report));
    RETURN_IF_ERROR(MeasureMemoryLimits(config, batches.front(), &report));
  }
  return report;
}

}  // namespace ember::bench
