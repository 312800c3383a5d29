// The struct each `ember` subcommand's flags are parsed into. Its help text and flags (names,
// values, help and groups) are in the command's own file, beside its Run function
// (app/commands.h); command_flags.cc lists the commands.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/command_line.h"
#include "app/config_flags.h"
#include "app/security_flags.h"
#include "bench/bench_options.h"
#include "bench/checkpoint_bench.h"
#include "bench/dense_bench.h"
#include "bench/replica_bench.h"
#include "bench/tier_bench.h"
#include "trainer/retrieval/item_index.h"

namespace ember::app {

// `ember cluster`: a whole local cluster, each role its own process (app/cluster_command.cc).
struct ClusterFlags {
  ConfigFlags config;
  std::string data_dir, summary_json, restore, log_jsonl;
  // Start the scheduler and servers only, and keep them serving until SIGINT/SIGTERM: clients
  // (the Python module, `ember train` started by hand) train against them.
  bool serve = false;
  std::string info_file;  // once serving: where clients connect, as JSON
};

// `ember tune`.
struct TuneFlags {
  ConfigFlags config;  // the base config; its --set and shorthands apply to every trial
  std::vector<std::string> grid;  // KEY=V1,V2,...
  std::string budget;             // trials and/or time (local/tune_grid.h)
  uint32_t parallel = 1;          // runs at once
  uint32_t seeds = 1;             // runs per trial, from the config's model.seed up
  std::string out;                // the chosen config (default: beside --config)
  std::string json;
  std::string work_dir;           // trial logs and summaries (default: a scratch folder)
};

// `ember scheduler`.
struct SchedulerFlags {
  ConfigFlags config;
  std::optional<std::string> bind;  // unset: the config's
  std::string advertise;            // HOST[:PORT] written to the endpoint file and logged
  std::string endpoint_file;        // internal: how `ember cluster` learns where it listens
  std::string data_dir;             // where its state survives a restart; empty: memory only
  SecurityFlags security;
  std::optional<std::string> metrics_bind;  // HOST:PORT; unset: the config's metrics.scheduler
};

// `ember server`; without --config the defaults are ClusterShape's.
struct ServerFlags {
  ConfigFlags config;
  std::optional<std::string> scheduler, bind, advertise, durability;  // unset: the config's
  std::optional<uint32_t> threads;
  std::optional<uint64_t> memory_budget;
  std::optional<uint64_t> cold_file_bytes;
  std::string data_dir;
  bool join = false;
  uint64_t move_bandwidth = 0;
  SecurityFlags security;
  std::optional<std::string> metrics_bind;  // HOST:PORT; unset: the config's metrics.servers
};

// `ember replica`.
struct ReplicaFlags {
  ConfigFlags config;  // optional: the security: and limits: sections
  std::string scheduler, bind = "tcp://127.0.0.1:*", advertise, data_dir, checkpoint;
  std::string endpoint_file;  // once serving: where clients connect
  uint32_t poll_ms = 20;
  uint32_t save_s = 60;
  SecurityFlags security;
};

// `ember train`.
struct TrainFlags {
  ConfigFlags config;
  uint32_t rank = 0;
  std::optional<std::string> scheduler, name;  // unset: the config's, and trainer[-R]
  std::string summary_json, restore;
  std::string log_jsonl;  // one JSON object per progress window, then the summary
  SecurityFlags security;
  std::optional<std::string> metrics_bind;  // HOST:PORT; unset: metrics.trainers (+ rank)
};

// `ember bench` (bench/bench.h).
struct BenchFlags {
  bench::BenchOptions options;
  // Defaults that depend on other flags.
  std::optional<uint32_t> server_threads;  // ps::DefaultWorkerThreads(servers)
  std::optional<uint32_t> rounds;          // 5, but at most --requests
  std::optional<uint64_t> populate;        // the whole vocabulary
  std::string json;
  SecurityFlags security;  // for a running cluster (--scheduler)
};

// `ember bench-dense` (bench/dense_bench.h).
struct DenseBenchFlags {
  bench::DenseBenchOptions options;
  std::vector<uint32_t> batches = {4096, 16384};
  bool tf32 = false;
  bool no_graphs = false;
};

// `ember bench-tier` (bench/tier_bench.h).
struct TierBenchFlags {
  bench::TierBenchOptions options;
  uint32_t budget_percent = 25;
  std::string durability = "ack";
  bool push_until_killed = false;  // internal: the recovery measurement's child
};

// `ember bench-checkpoint`.
struct CheckpointBenchFlags {
  bench::CheckpointBenchOptions options;
  uint32_t budget_percent = 25;
};

// `ember recommend`.
struct RecommendFlags {
  ConfigFlags config;
  std::string checkpoint, scheduler, json;
  std::vector<std::string> users;
  bool evaluate = false;
  uint32_t k = 10;
  uint32_t queries = 2000;
  trainer::IndexOptions index;
  SecurityFlags security;
};

// `ember bench-replica`.
struct ReplicaBenchFlags {
  bench::ReplicaBenchOptions options;
  std::string json;  // the report as JSON into this file
};

// `ember checkpoint`.
struct CheckpointFlags {
  std::string scheduler, dir;
  std::string after;    // an increment of this checkpoint
  bool chain = false;   // a base of a new chain
  std::string compact;  // fold the chain ending here into a base (no cluster needed)
  std::string out;      // where the folded base goes
  uint64_t timeout_s = 600;
  SecurityFlags security;
};

// `ember status`.
struct StatusFlags {
  std::string scheduler;
  bool watch = false;   // refresh until Ctrl-C (or `count` refreshes)
  double every = 2.0;   // seconds between refreshes
  uint32_t count = 0;   // refreshes, 0: until stopped
  SecurityFlags security;
};

// `ember drain`.
struct DrainFlags {
  std::string scheduler;
  uint32_t server = 0;
  uint64_t wait_s = 0;
  SecurityFlags security;
};

// `ember export`: one of --checkpoint or --scheduler.
struct ExportFlags {
  std::string checkpoint, scheduler, out;
  SecurityFlags security;
  ConfigFlags config;  // optional: its interaction files give the raw-id maps
};

// `ember lookup`: rows of a running cluster, read without changing them.
struct LookupFlags {
  std::string scheduler, table;
  std::string keys;                 // a file of one uint64 per line, or - for stdin
  std::string out;                  // FILE.npy (and FILE.found.npy); empty: TSV on stdout
  std::string missing = "initial";  // initial or flag: what a key without a row gets
  uint64_t timeout_s = 30;
  SecurityFlags security;
};

// `ember keygen`.
struct KeygenFlags {
  std::string out = ".";
  std::vector<std::string> names;
};

// `ember plot`.
struct PlotFlags {
  std::vector<std::string> files;  // run logs (--log-jsonl) and `ember bench --json` results
  std::string out, labels;
};

// `ember plan` (local/cluster_plan.h).
struct PlanFlags {
  uint64_t rows = 0;
  uint32_t dim = 0;
  std::string optimizer = "adagrad";
  std::string wire = "f32";        // f32 or f16
  double keys_per_second = 0;      // pulled, each also pushed; 0: no throughput target
  double server_memory_gib = 256;  // RAM of one server
  uint32_t server_cores = 16;
  double server_network_gbits = 25;
  double hot_fraction = 1;         // share of rows in memory; the rest in the RocksDB tier
  uint32_t partitions = 1024;
  bool json = false;
};

// Adds every subcommand to `ember`, in the order `ember --help` lists them.
std::vector<Command> AddCommands(CLI::App& ember);

}  // namespace ember::app
