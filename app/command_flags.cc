// Every subcommand's help text and flags.
#include "app/command_flags.h"

#include "app/commands.h"
#include "app/metrics_flags.h"

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

constexpr CommandText kTuneCommand = {
    .name = "tune",
    .summary = "train a grid of config settings and choose one on the validation split",
    .usage = "ember tune --config FILE --grid KEY=V1,V2,... [--grid ...] [options]",
    .description =
        "Runs a local cluster per combination of the --grid values (a trial), trained on the "
        "training split less each user's validation item and evaluated on validation only. "
        "Chooses the trial with the best validation HR@k (NDCG@k breaks ties; with "
        "train.early_stopping, its best evaluation), prints a table of the trials, writes the "
        "chosen config as YAML, then trains it once more and reports its test figures alone. A "
        "trial that fails is reported and skipped.",
};

void AddTuneFlags(CLI::App* command, TuneFlags* flags) {
  AddConfigFlags(command, &flags->config, /*required=*/true);
  AddDataRootFlag(command, &flags->config);
  AddTrainingFlags(command, &flags->config);
  const std::string search = "search";
  command->add_option("--grid", flags->grid,
                      "a key and the values to try, e.g. model.temperature=0.05,0.1,0.2 or "
                      "model.hidden=[64],[128,64] (repeatable: every combination is a trial)")
      ->type_name("KEY=V1,V2")
      ->required()
      ->group(search);
  AddValue(command, "--budget", &flags->budget, "LIMIT",
           "at most N trials (12), this much time (90s, 30m, 2h: trials still running then are "
           "stopped), or both (12,2h); trials run in grid order, the first key varying slowest")
      ->group(search);
  AddCount(command, "--parallel", &flags->parallel, "P",
           "runs at once, each its own local cluster (default 1)")
      ->group(search);
  AddCount(command, "--seeds", &flags->seeds, "N",
           "train each trial with N model seeds (model.seed and the N-1 after it) and choose on "
           "their mean validation figures; the chosen config's test figures are then the mean of "
           "N runs too, with their spread (default 1)")
      ->check(CLI::PositiveNumber)
      ->group(search);
  AddValue(command, "--out", &flags->out, "FILE",
           "the chosen config (default: CONFIG.tuned.yaml beside --config, so that its relative "
           "data paths still resolve)")
      ->group("output");
  AddValue(command, "--json", &flags->json, "FILE", "every trial, the choice and its test figures")
      ->group("output");
  AddValue(command, "--work-dir", &flags->work_dir, "DIR",
           "keep each trial's log and summary here (default: a scratch folder, removed)")
      ->group("output");
}

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
  // Internal: how `ember cluster` learns where its scheduler listens.
  command->add_option("--endpoint-file", flags->endpoint_file)->group("");
  AddSyncFlags(command, &flags->config);
  AddCheckpointFlags(command, &flags->config);
  AddSecurityFlags(command, &flags->security, /*can_bind=*/true);
  AddMetricsBindFlag(command, &flags->metrics_bind, "metrics.scheduler");
}

constexpr CommandText kServerCommand = {
    .name = "server",
    .summary = "run one parameter server",
    .usage = "ember server --scheduler ENDPOINT [options]",
    .description =
        "Runs one parameter server: it registers with the scheduler, hosts the partitions it is "
        "given and serves pulls and pushes.",
};

void AddServerFlags(CLI::App* command, ServerFlags* flags) {
  AddValue(command, "--scheduler", &flags->scheduler, "ENDPOINT",
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

constexpr CommandText kTrainCommand = {
    .name = "train",
    .summary = "run one trainer against a running cluster",
    .usage = "ember train --config FILE --scheduler ENDPOINT [options]",
    .description =
        "Runs one trainer against a running cluster: pulls rows, trains the two-tower model, "
        "pushes gradients, then reports.",
};

void AddTrainFlags(CLI::App* command, TrainFlags* flags) {
  AddConfigFlags(command, &flags->config, /*required=*/true);
  AddDataRootFlag(command, &flags->config);
  AddValue(command, "--scheduler", &flags->scheduler, "ENDPOINT",
           "the scheduler's endpoint (default: cluster.scheduler)");
  AddValue(command, "--name", &flags->name, "NAME",
           "trainer name to register under (default: trainer, or trainer-R of many)");
  AddTrainingFlags(command, &flags->config);
  AddSyncFlags(command, &flags->config);
  AddCount(command, "--rank", &flags->rank, "R",
           "this trainer's share of the data, in [0, trainers) (default 0)")
      ->group("many trainers");
  AddValue(command, "--restore", &flags->restore, "DIR",
           "resume from a checkpoint (or the newest complete one under DIR): rank 0 loads the "
           "servers (with authentication, rank 0 needs an admin key), every trainer its step, data "
           "position and dense state; training continues to the same total of steps")
      ->group("checkpoints");
  AddValue(command, "--summary-json", &flags->summary_json, "FILE",
           "also write the final figures as JSON")
      ->group("output");
  AddValue(command, "--log-jsonl", &flags->log_jsonl, "FILE",
           "write one JSON object per progress window, then the summary, a line each (ember plot "
           "draws them)")
      ->group("output");
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
  AddMetricsBindFlag(command, &flags->metrics_bind, "metrics.trainers, plus the rank");
}

constexpr CommandText kBenchCommand = {
    .name = "bench",
    .summary = "drive synthetic pull/push traffic at a cluster and compare with raw ZeroMQ",
    .usage = "ember bench [options]",
    .description =
        "Measures the data plane: pull and push throughput, latency, server CPU and memory per "
        "row, against a cluster started in this process (or --scheduler), and the same traffic "
        "against bare ZeroMQ echo peers for comparison, the two alternating in --rounds rounds "
        "so that both see the same load. Always bounded by --requests and --seconds.",
};

void AddBenchFlags(CLI::App* command, BenchFlags* flags) {
  bench::BenchOptions& o = flags->options;
  const std::string cluster = "cluster", traffic = "traffic", limits = "limits";
  AddCount(command, "--servers", &o.servers, "N", "servers of the in-process cluster (default 1)")
      ->group(cluster);
  AddCount(command, "--server-threads", &flags->server_threads, "N",
           "worker threads per server (default: the cores less one per server, at least 1)")
      ->group(cluster);
  CLI::Option* scheduler = AddValue(command, "--scheduler", &o.scheduler, "ENDPOINT",
                                    "benchmark a running cluster instead of an in-process one")
                               ->group(cluster);
  AddValue(command, "--table", &o.table, "NAME",
           "table to use on a running cluster (default bench)")
      ->needs(scheduler)
      ->group(cluster);
  AddCount(command, "--clients", &o.clients, "N",
           "client threads, each with its own connection (default 1)")
      ->group(traffic);
  AddCount(command, "--keys-per-request", &o.keys_per_request, "K",
           "distinct keys per pull or push (default 16384)")
      ->group(traffic);
  AddCount(command, "--max-keys-per-message", &o.max_keys_per_message, "K",
           "a server's share of a request goes in messages of at most K keys (default 4096)")
      ->group(traffic);
  AddValue(command, "--exponent", &o.exponent, "X",
           "Zipf exponent of key popularity (default 1.05)")
      ->group(traffic);
  AddCount(command, "--vocabulary", &o.vocabulary, "N",
           "number of distinct keys (default 10000000)")
      ->group(traffic);
  AddCount(command, "--populate", &flags->populate, "N",
           "rows created before timing, the N most popular keys (default: the whole vocabulary)")
      ->group(traffic);
  AddCount(command, "--seed", &o.seed, "N", "seed of the key draws and the table (default 1)")
      ->group(traffic);
  AddCount(command, "--dim", &o.dim, "N", "row width of the benchmark table (default 64)")
      ->group("table");
  AddValue(command, "--optimizer", &o.optimizer, "KIND",
           "sgd, adagrad, adam or ftrl, learning rate 0.05 (default adagrad)")
      ->group("table");
  AddCount(command, "--requests", &o.requests, "N",
           "timed requests per client per operation, over all rounds (default 200)")
      ->group(limits);
  AddValue(command, "--seconds", &o.seconds, "S",
           "time limit per operation over all rounds, for ember and raw ZeroMQ each (default 30)")
      ->group(limits);
  AddCount(command, "--rounds", &flags->rounds, "R",
           "split the requests and the time limit into R rounds of ember pull, raw pull, ember "
           "push, raw push; 'vs raw' is the median of the rounds' ratios (default 5, at most "
           "--requests)")
      ->group(limits);
  AddValue(command, "--json", &flags->json, "FILE", "also write every figure as JSON")
      ->group("output");
  command
      ->add_flag("--curve", o.curve,
                 "authenticate and encrypt with CurveZMQ: the in-process cluster and the echo "
                 "peers make keys of their own (the cost of encryption, side by side)")
      ->group(cluster);
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
}

constexpr CommandText kBenchDenseCommand = {
    .name = "bench-dense",
    .summary = "time the dense two-tower step alone on the configured backend",
    .usage = "ember bench-dense [--batches 4096,16384] [--backend cuda|cpu]",
    .description =
        "Times training steps of the default two-tower model on random pre-gathered embedding "
        "rows (no servers) and prints steps/s, samples/s and ms/step per batch size.",
};

void AddDenseBenchFlags(CLI::App* command, DenseBenchFlags* flags) {
  AddValue(command, "--batches", &flags->batches, "LIST",
           "comma-separated batch sizes (default: 4096,16384)")
      ->delimiter(',')
      ->check(CLI::Range(1u, 1u << 20))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  AddValue(command, "--backend", &flags->options.backend, "KIND", "cuda or cpu (default: cuda)")
      ->check(CLI::IsMember({"cuda", "cpu"}));
  AddValue(command, "--windows", &flags->options.windows, "N",
           "timed windows per batch size; the median is reported (default: 7)")
      ->check(CLI::Range(1, 1'000'000));
  AddValue(command, "--steps", &flags->options.steps, "N",
           "training steps per window (default: 50)")
      ->check(CLI::Range(1, 1'000'000));
  command->add_flag("--tf32", flags->tf32, "TF32 tensor-core matrix products (model.tf32)");
  command->add_flag("--no-graphs", flags->no_graphs,
                    "launch every kernel instead of replaying CUDA graphs");
}

constexpr CommandText kBenchTierCommand = {
    .name = "bench-tier",
    .summary = "compare a table over RocksDB with a memory budget against one in memory",
    .usage = "ember bench-tier --data-dir DIR [options]",
    .description =
        "Compares a table with a RocksDB tier and a memory budget with the same table all in "
        "memory, and times recovery after SIGKILL.",
};

void AddTierBenchFlags(CLI::App* command, TierBenchFlags* flags) {
  bench::TierBenchOptions& o = flags->options;
  AddValue(command, "--data-dir", &o.data_dir, "DIR",
           "where the tiered table's RocksDB goes (required; new or empty)")
      ->required();
  AddCount(command, "--rows", &o.rows, "N", "rows in the table (default 20000000)");
  AddCount(command, "--dim", &o.dim, "N", "row width (default 16)");
  AddValue(command, "--optimizer", &o.optimizer, "NAME", "sgd, adagrad (default), adam or ftrl");
  AddCount(command, "--budget-percent", &flags->budget_percent, "P",
           "memory budget as a percentage of the rows (default 25)");
  AddCount(command, "--threads", &o.threads, "N", "request threads (default 2)");
  AddCount(command, "--keys-per-request", &o.keys_per_request, "N",
           "distinct keys per request (default 4096)");
  AddCount(command, "--seconds", &o.seconds, "S", "seconds per measured phase (default 10)");
  AddValue(command, "--durability", &flags->durability, "MODE",
           "ack (default), sync or flush, for the tiered pushes")
      ->check(CLI::IsMember({"ack", "sync", "flush"}));
  AddValue(command, "--lookahead", &o.lookaheads, "K[,K...]",
           "look-ahead depths of the tiered pull+push phase, one run each (default 0: no hints)")
      ->delimiter(',');
  // Internal: the recovery measurement's child.
  command->add_flag("--push-until-killed", flags->push_until_killed)->group("");
}

constexpr CommandText kBenchCheckpointCommand = {
    .name = "bench-checkpoint",
    .summary = "compare incremental checkpoint cuts with full ones, and time a chain's restore",
    .usage = "ember bench-checkpoint --dir DIR [options]",
    .description =
        "Holds one table in a local cluster (in memory, or --tiered over RocksDB with a memory "
        "budget) and cuts checkpoints as training does: for each share of rows changed since "
        "the cut before, the bytes and time of an incremental cut against a full one of the same "
        "rows; then a chain's restore against a full checkpoint's, and its compaction.",
};

void AddCheckpointBenchFlags(CLI::App* command, CheckpointBenchFlags* flags) {
  bench::CheckpointBenchOptions& o = flags->options;
  AddValue(command, "--dir", &o.dir, "DIR",
           "where the checkpoints (and with --tiered the servers' rows) go (required; new or "
           "empty)")
      ->required();
  AddCount(command, "--rows", &o.rows, "N", "rows in the table (default 2000000)");
  AddCount(command, "--dim", &o.dim, "N", "row width (default 16)");
  AddValue(command, "--optimizer", &o.optimizer, "NAME", "sgd, adagrad (default), adam or ftrl");
  AddCount(command, "--servers", &o.servers, "N", "servers (default 2)");
  AddCount(command, "--partitions", &o.partitions, "N", "partitions (default 256)");
  AddValue(command, "--changed", &o.changed_percent, "P[,P...]",
           "percentages of the rows changed between two cuts (default 1,10,50)")
      ->delimiter(',');
  AddCount(command, "--rounds", &o.rounds, "N", "rounds per measurement; medians (default 3)");
  AddCount(command, "--chain", &o.chain, "N",
           "checkpoints of the restored chain, its base included (default 10)");
  AddValue(command, "--chain-changed", &o.chain_changed_percent, "P",
           "percentage of the rows changed before each increment of the chain (default 10)");
  command->add_flag("--tiered", o.tiered, "rows over RocksDB with a memory budget");
  AddCount(command, "--budget-percent", &flags->budget_percent, "P",
           "--tiered: memory budget as a percentage of the rows (default 25)");
}

constexpr CommandText kCheckpointCommand = {
    .name = "checkpoint",
    .summary = "have a running cluster write a consistent checkpoint",
    .usage = "ember checkpoint --scheduler ENDPOINT --dir DIR [--chain | --after PREV]\n"
             "       ember checkpoint --compact CHECKPOINT [--out DIR]",
    .description =
        "Has every trainer stop after the same step, the servers write their partitions and the "
        "trainers their step, data position and dense state into DIR, then training goes on. "
        "Restore with `ember train --restore DIR` (or `ember cluster --restore DIR`). "
        "--chain writes the base of a chain of incremental checkpoints; --after PREV an increment "
        "of the chain checkpoint PREV, holding only the rows changed since PREV (and the keys "
        "deleted since). --compact folds the chain that ends at CHECKPOINT (or at the newest "
        "step-* in it) into a new base, from the files alone, while the cluster trains on.",
};

void AddCheckpointCommandFlags(CLI::App* command, CheckpointFlags* flags) {
  AddValue(command, "--scheduler", &flags->scheduler, "ENDPOINT", "the running cluster's scheduler");
  AddValue(command, "--dir", &flags->dir, "DIR",
           "where the checkpoint goes (a path every server and trainer can write)");
  auto* chain = command->add_flag("--chain", flags->chain,
                                  "write the base of a chain of incremental checkpoints");
  AddValue(command, "--after", &flags->after, "PREV",
           "write an increment of the chain checkpoint PREV")
      ->excludes(chain);
  auto* compact = AddValue(command, "--compact", &flags->compact, "CHECKPOINT",
                           "fold the chain ending at CHECKPOINT into a new base (no cluster)");
  AddValue(command, "--out", &flags->out, "DIR",
           "--compact: where the base goes (default: CHECKPOINT.base beside it)")
      ->needs(compact);
  AddCount(command, "--timeout-s", &flags->timeout_s, "S", "give up after S seconds (default 600)");
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
}

constexpr CommandText kStatusCommand = {
    .name = "status",
    .summary = "a running cluster's servers, partitions, rows and moves",
    .usage = "ember status --scheduler ENDPOINT",
    .description =
        "Prints the routing epoch, each server's state, partitions, rows and bytes, and the "
        "partition moves in progress.",
};

void AddStatusFlags(CLI::App* command, StatusFlags* flags) {
  AddValue(command, "--scheduler", &flags->scheduler, "ENDPOINT", "the running cluster's scheduler")
      ->required();
  command->add_flag("--watch", flags->watch,
                    "refresh until Ctrl-C, with keys/s per server and the moves' rate and ETA")
      ->group("watching");
  AddValue(command, "--every", &flags->every, "SECONDS", "seconds between refreshes (default 2)")
      ->group("watching");
  AddCount(command, "--count", &flags->count, "N", "stop after N refreshes (default: never)")
      ->group("watching");
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
}

constexpr CommandText kDrainCommand = {
    .name = "drain",
    .summary = "move every partition off a server of a running cluster; it then exits",
    .usage = "ember drain --scheduler ENDPOINT --server ID",
    .description =
        "Moves every partition of a server to the others (fair shares, paced by their "
        "--move-bandwidth) while training goes on; the drained server then exits.",
};

void AddDrainFlags(CLI::App* command, DrainFlags* flags) {
  AddValue(command, "--scheduler", &flags->scheduler, "ENDPOINT", "the running cluster's scheduler")
      ->required();
  AddCount(command, "--server", &flags->server, "ID",
           "the server to drain (ids as `ember status` shows them)")
      ->required();
  AddCount(command, "--wait-s", &flags->wait_s, "S",
           "wait up to S seconds for the partitions to move (default 0: do not wait)");
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
}

constexpr CommandText kExportCommand = {
    .name = "export",
    .summary = "write a checkpoint's tables and dense towers as NumPy .npy files",
    .usage = "ember export (--checkpoint DIR | --scheduler ENDPOINT) --out DIR",
    .description =
        "Verifies a checkpoint and writes each table's keys (uint64, [n], ascending) and rows "
        "(float32, [n, dim]) as .npy files, and the dense towers as "
        "dense/<tower>.<layer>.{weight,bias}.npy (float32, [out, in] and [out]). With the job's "
        "--config and interaction data, also <table>.ids.tsv for the user and item id tables: "
        "raw_id<TAB>key per line, every id of the interaction file.",
};

void AddExportFlags(CLI::App* command, ExportFlags* flags) {
  CLI::Option* checkpoint =
      AddValue(command, "--checkpoint", &flags->checkpoint, "DIR",
               "checkpoint directory (with its MANIFEST), or a folder of periodic step-* "
               "checkpoints (the newest complete one)");
  AddValue(command, "--scheduler", &flags->scheduler, "ENDPOINT",
           "instead: a running cluster, checkpointed into OUT/checkpoint first")
      ->excludes(checkpoint);
  AddValue(command, "--out", &flags->out, "DIR",
           "where to write <table>.keys.npy, <table>.rows.npy and dense/*.npy")
      ->required();
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
  // The job's config: with interaction data, <table>.ids.tsv maps each raw id to its key.
  AddConfigFlags(command, &flags->config, /*required=*/false);
  AddDataRootFlag(command, &flags->config);
}

constexpr CommandText kLookupCommand = {
    .name = "lookup",
    .summary = "read rows of a running cluster without creating or changing any",
    .usage = "ember lookup --scheduler ENDPOINT --table T --keys FILE|- [--out FILE.npy]",
    .description =
        "Reads the rows of the keys in FILE (one unsigned 64-bit integer per line; - reads "
        "stdin) as the servers hold them, for serving. Nothing changes on the servers: no row is "
        "created, no optimizer state touched. A key without a row gets the table's initial row "
        "(--missing initial, computed, not stored) or zeros (--missing flag); either way its "
        "found flag is 0. Prints key<TAB>found<TAB>values, or writes FILE.npy (float32, [n, "
        "dim]) and FILE.found.npy (uint8, [n]).",
};

void AddLookupFlags(CLI::App* command, LookupFlags* flags) {
  AddValue(command, "--scheduler", &flags->scheduler, "ENDPOINT", "the running cluster's scheduler")
      ->required();
  AddValue(command, "--table", &flags->table, "T", "the table to read")->required();
  AddValue(command, "--keys", &flags->keys, "FILE", "one key per line; - reads stdin")->required();
  AddValue(command, "--missing", &flags->missing, "MODE",
           "initial (default): a key without a row gets its initial row; flag: zeros")
      ->check(CLI::IsMember({"initial", "flag"}));
  AddValue(command, "--out", &flags->out, "FILE.npy",
           "write the rows (and FILE.found.npy) instead of printing TSV");
  AddCount(command, "--timeout-s", &flags->timeout_s, "S", "give up after S seconds (default 30)");
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
}

constexpr CommandText kKeygenCommand = {
    .name = "keygen",
    .summary = "make CurveZMQ key pairs for a cluster's processes and tools",
    .usage = "ember keygen [--out DIR] NAME...",
    .description =
        "Writes DIR/NAME.key (the key pair: keep it secret, mode 0600) and DIR/NAME.pub (the "
        "public key) for each NAME, never overwriting a file. A folder of ROLE[-NAME].pub files "
        "is a keyring the config can trust as a whole (security.keyring): name keys server-*, "
        "trainer-*, admin-* and scheduler. See docs/security.md.",
};

void AddKeygenFlags(CLI::App* command, KeygenFlags* flags) {
  AddValue(command, "--out", &flags->out, "DIR", "where the key files go (default: .)");
  command->add_option("names", flags->names, "one key pair per name, e.g. scheduler server-0")
      ->required()
      ->type_name("NAME");
}

constexpr CommandText kPlotCommand = {
    .name = "plot",
    .summary = "draw training runs and benchmark results as PNG figures",
    .usage = "ember plot FILE... --out DIR [--labels A,B,...]",
    .description =
        "Draws run logs (train/cluster --log-jsonl) as loss.png, throughput.png and "
        "step_time.png (the time per step split into pull, compute, push and waiting), several "
        "runs on one figure, and `ember bench --json` results as bench.png against raw ZeroMQ. "
        "Runs the Python package's ember.plot with matplotlib (Debian: python3-matplotlib).",
};

void AddPlotFlags(CLI::App* command, PlotFlags* flags) {
  command->add_option("files", flags->files, "run logs and bench results")
      ->required()
      ->type_name("FILE");
  AddValue(command, "--out", &flags->out, "DIR", "where the PNG files go")->required();
  AddValue(command, "--labels", &flags->labels, "A,B,...",
           "one label per FILE (default: the files' names)");
}

constexpr CommandText kPlanCommand = {
    .name = "plan",
    .summary = "servers, memory, disk and network for a table of N rows at K keys/s",
    .usage = "ember plan --rows N --dim D [--optimizer O] [--keys-per-second K] [options]",
    .description =
        "Prints the bytes a row takes in memory, on disk, in a checkpoint and on the wire, the "
        "servers needed for the memory and for the keys/s, each server's share, and how long "
        "moving or reopening that share takes, each figure with its arithmetic. The per-row "
        "layout comes from the code; CPU per key, memory overhead, move and reopen rates were "
        "measured on ember (docs/sizing.md).",
};

void AddPlanFlags(CLI::App* command, PlanFlags* flags) {
  const std::string table = "table", load = "traffic", servers = "servers";
  AddCount(command, "--rows", &flags->rows, "N", "rows of the table")->required()->group(table);
  AddCount(command, "--dim", &flags->dim, "D", "values per row")->required()->group(table);
  AddValue(command, "--optimizer", &flags->optimizer, "KIND",
           "sgd, adagrad (default), adam or ftrl: its state is stored with each row")
      ->group(table);
  AddValue(command, "--partitions", &flags->partitions, "P",
           "cluster.partitions (default 1024): rows per partition size the hash index")
      ->check(Digits())
      ->group(table);
  AddValue(command, "--keys-per-second", &flags->keys_per_second, "K",
           "keys pulled per second over the cluster, each also pushed (default 0: none)")
      ->group(load);
  AddValue(command, "--wire", &flags->wire, "FORMAT",
           "f32 (default) or f16: how rows and gradients travel (train.wire_fp16)")
      ->check(CLI::IsMember({"f32", "f16"}))
      ->group(load);
  AddValue(command, "--server-memory-gib", &flags->server_memory_gib, "GIB",
           "memory of one server (default 256)")
      ->group(servers);
  AddCount(command, "--server-cores", &flags->server_cores, "N",
           "cores of one server (default 16)")
      ->group(servers);
  AddValue(command, "--server-network-gbits", &flags->server_network_gbits, "GBITS",
           "network of one server, Gbit/s (default 25)")
      ->group(servers);
  AddValue(command, "--hot-fraction", &flags->hot_fraction, "F",
           "share of rows kept in memory (default 1); below 1 the rest go to each server's "
           "RocksDB tier (--memory-budget)")
      ->group(servers);
  command->add_flag("--json", flags->json, "print the plan as JSON instead of a table")
      ->group("output");
}

}  // namespace

std::vector<Command> AddCommands(CLI::App& ember) {
  return {
      MakeCommand(ember, kClusterCommand, AddClusterFlags, RunCluster),
      MakeCommand(ember, kTuneCommand, AddTuneFlags, RunTune),
      MakeCommand(ember, kSchedulerCommand, AddSchedulerFlags, RunScheduler),
      MakeCommand(ember, kServerCommand, AddServerFlags, RunServer),
      MakeCommand(ember, kTrainCommand, AddTrainFlags, RunTrain),
      MakeCommand(ember, kBenchCommand, AddBenchFlags, RunBench),
      MakeCommand(ember, kBenchDenseCommand, AddDenseBenchFlags, RunDenseBench),
      MakeCommand(ember, kBenchTierCommand, AddTierBenchFlags, RunTierBench),
      MakeCommand(ember, kBenchCheckpointCommand, AddCheckpointBenchFlags, RunCheckpointBench),
      MakeCommand(ember, kPlanCommand, AddPlanFlags, RunPlan),
      MakeCommand(ember, kCheckpointCommand, AddCheckpointCommandFlags, RunCheckpoint),
      MakeCommand(ember, kStatusCommand, AddStatusFlags, RunStatus),
      MakeCommand(ember, kDrainCommand, AddDrainFlags, RunDrain),
      MakeCommand(ember, kExportCommand, AddExportFlags, RunExport),
      MakeCommand(ember, kLookupCommand, AddLookupFlags, RunLookup),
      MakeCommand(ember, kPlotCommand, AddPlotFlags, RunPlot),
      MakeCommand(ember, kKeygenCommand, AddKeygenFlags, RunKeygen),
  };
}

}  // namespace ember::app
