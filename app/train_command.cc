// `ember train`: one trainer process: connects to a cluster, trains, evaluates, and reports.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "app/commands.h"
#include "app/config_flags.h"
#include "app/logging.h"
#include "app/metrics_flags.h"
#include "app/process_setup.h"
#include "app/train_early_stopping.h"
#include "common/checkpoint_layout.h"
#include "common/file_io.h"
#include "common/human_format.h"
#include "local/run_log.h"
#include "local/train_summary.h"
#include "ps/client/client.h"
#include "trainer/backend.h"
#include "trainer/data_config.h"
#include "trainer/interaction_source.h"
#include "trainer/ranking_eval.h"
#include "trainer/ranking_metrics.h"
#include "trainer/synthetic_source.h"
#include "trainer/trainer.h"
#include "trainer/trainer_metrics.h"

namespace ember::app {
namespace {

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
  AddSchedulerEndpointFlag(command, &flags->scheduler,
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

}  // namespace

Command MakeTrainCommand(CLI::App& ember) {
  return MakeCommand(ember, kTrainCommand, AddTrainFlags, RunTrain);
}

namespace {

int Fail(const Status& status) { return PrintError("train", status); }

// This trainer's data and how many steps it runs. Synthetic data: trainer `rank` draws from its
// own seed stream; interaction files are shared sample by sample (see InteractionSource).
struct TrainData {
  std::shared_ptr<trainer::InteractionDataset> dataset;  // interaction data only
  std::unique_ptr<trainer::DataSource> source;
  uint32_t steps = 0;
};

Result<TrainData> LoadTrainData(trainer::DataConfig data, const trainer::ModelConfig& model,
                                const trainer::TrainOptions& train) {
  TrainData loaded;
  if (data.kind == "interactions") {
    ASSIGN_OR_RETURN(loaded.dataset, trainer::LoadInteractions(data.interactions));
    loaded.source = std::make_unique<trainer::InteractionSource>(
        loaded.dataset, data.interactions.seed, train.rank, train.sync.trainers, model.negatives,
        trainer::SharesNegatives(model));
  } else {
    if (train.sync.trainers > 1) data.synthetic.seed += 0x9E3779B97F4A7C15ull * train.rank;
    ASSIGN_OR_RETURN(loaded.source, trainer::MakeDataSource(data));
  }
  loaded.steps = train.steps;
  if (train.epochs > 0) {
    if (!loaded.dataset) return InvalidArgument("train.epochs needs interaction data");
    const double share = trainer::EpochShare(*loaded.dataset, train.rank, train.sync.trainers);
    loaded.steps = static_cast<uint32_t>(std::ceil(train.epochs * share / train.batch_size));
  }
  return loaded;
}

void PrintWindow(const trainer::WindowStats& w, uint32_t steps, uint32_t batch_size) {
  std::printf(
      "step %5u/%u  loss %.4f  %9.0f samples/s  pull %6.1f ms  compute %7.1f ms  "
      "push %6.1f ms  wait %6.1f ms  busy %3.0f%%  rows/step %.0f  eta %s\n",
      w.last_step, steps, w.loss, w.samples_per_second, w.pull_ms, w.compute_ms, w.push_ms,
      w.wait_ms, 100.0 * w.device_busy, w.unique_keys,
      FormatDuration(local::EtaSeconds(w, steps, batch_size)).c_str());
  std::fflush(stdout);
}

void PrintSummary(const trainer::TrainSummary& s, uint32_t batch_size,
                  const std::vector<ServerStats>& servers,
                  const std::vector<ServerInfo>& endpoints) {
  const trainer::WindowStats& a = s.first_window;
  const trainer::WindowStats& b = s.last_window;
  double pull = 0, compute = 0, push = 0;
  for (const auto& w : s.windows) {
    const double n = w.last_step - w.first_step + 1;
    pull += w.pull_ms * n;
    compute += w.compute_ms * n;
    push += w.push_ms * n;
  }
  const double steps = std::max<uint32_t>(s.steps, 1);
  std::printf("\nsummary\n");
  std::printf("  loss        %.4f (steps %u-%u) -> %.4f (steps %u-%u)\n", a.loss, a.first_step,
              a.last_step, b.loss, b.first_step, b.last_step);
  std::printf("  throughput  %.0f samples/s: %u steps of %u samples in %.1f s on the %s backend\n",
              s.samples_per_second, s.steps, batch_size, s.seconds, s.backend.c_str());
  std::printf(
      "  per step    pull %.1f ms, compute %.1f ms, push %.1f ms, other trainers "
      "%.1f ms (waits, means)\n",
      pull / steps, compute / steps, push / steps, local::WaitPerStepMs(s));
  for (const ServerStats& server : servers) {
    const TableStats sum = local::SumTableStats(server);
    const std::string endpoint =
        server.server_id < endpoints.size() ? endpoints[server.server_id].endpoint : "?";
    std::printf(
        "  server %u    %s: %llu rows in %zu tables (%.1f MiB), %u partitions, "
        "%llu keys pulled, %llu pushed, %llu errors\n",
        server.server_id, endpoint.c_str(), static_cast<unsigned long long>(sum.rows),
        server.tables.size(), sum.bytes / 1048576.0, server.partitions_owned,
        static_cast<unsigned long long>(server.keys_pulled),
        static_cast<unsigned long long>(server.keys_pushed),
        static_cast<unsigned long long>(server.errors));
  }
}

// Leave-one-out evaluation of the trained model next to the most-popular baseline, printed.
Result<local::EvalFigures> Evaluate(ps::Client& client, trainer::Backend& backend,
                                    const trainer::InteractionDataset& dataset,
                                    const local::ClusterConfig& config) {
  const trainer::TrainOptions& train = config.train;
  const bool full = train.eval_protocol == "full";
  const unsigned k = train.eval_k;
  // With one relevant item per user, Recall@k over the catalogue is its hit rate.
  const char* hit = full ? "Recall" : "HR";
  local::EvalFigures figures;
  figures.protocol = train.eval_protocol;
  if (!dataset.validation_cases().empty()) {
    ASSIGN_OR_RETURN(figures.validation,
                     trainer::EvaluateRanking(client, backend, dataset, dataset.validation_cases(),
                                              config.model, train));
  }
  auto print_validation = [&] {
    if (!figures.validation) return;
    std::printf("              ember valid. %s@%u %.4f ± %.4f  NDCG@%u %.4f ± %.4f  (%zu users' "
                "latest training item, held out)\n",
                hit, k, figures.validation->hit_rate, figures.validation->hit_rate_se, k,
                figures.validation->ndcg, figures.validation->ndcg_se, figures.validation->cases);
  };
  if (!train.eval_test) {
    figures.test = false;
    std::printf("  evaluation  validation split only (train.eval_test: false)\n");
    print_validation();
    return figures;
  }
  ASSIGN_OR_RETURN(figures.model,
                   trainer::EvaluateRanking(client, backend, dataset, config.model, train));
  figures.popularity = trainer::EvaluatePopularity(dataset, train.eval_k, full);
  if (full) {
    std::printf("  evaluation  leave-one-out, %zu users, each against every item it did not train "
                "on (± standard error):\n",
                figures.model.cases);
  } else {
    std::printf("  evaluation  leave-one-out, %zu users, %u sampled negatives each (± standard "
                "error):\n",
                figures.model.cases, config.data.interactions.negatives);
  }
  const double items = static_cast<double>(std::max<size_t>(1, dataset.num_items()));
  for (const auto& [name, result] : {std::pair{"ember", &figures.model},
                                     std::pair{"most-popular", &figures.popularity}}) {
    std::printf("              %-12s %s@%u %.4f ± %.4f  NDCG@%u %.4f ± %.4f  ties %.1f%%  "
                "coverage %.1f%% of %zu items\n",
                name, hit, k, result->hit_rate, result->hit_rate_se, k, result->ndcg,
                result->ndcg_se, 100.0 * result->tie_fraction,
                100.0 * result->items_recommended / items, dataset.num_items());
  }
  print_validation();
  // Test items never seen in training can only be ranked by their features.
  for (const auto& [name, split] : {std::pair{"warm", &figures.model.warm},
                                    std::pair{"cold", &figures.model.cold}}) {
    std::printf("              ember %-6s %s@%u %.4f  NDCG@%u %.4f  (%zu users whose test item "
                "%s in training)\n",
                name, hit, k, split->hit_rate, k, split->ndcg, split->cases,
                split == &figures.model.warm ? "occurs" : "never occurs");
  }
  return figures;
}

// The trainer's client: the scheduler (--scheduler, else the config's, which must not be a
// wildcard), limits, name, heartbeat, row format and keys.
Result<ps::ClientOptions> TrainerClientOptions(const TrainFlags& flags,
                                               const local::ClusterConfig& config) {
  ps::ClientOptions client_options;
  client_options.scheduler_endpoint = flags.scheduler.value_or(config.cluster.scheduler);
  client_options.limits = config.limits;
  client_options.max_keys_per_message =
      std::min(client_options.max_keys_per_message, config.limits.keys_per_message);
  client_options.name = flags.name.value_or(
      config.train.sync.trainers > 1 ? "trainer-" + std::to_string(config.train.rank) : "trainer");
  // In every mode: a checkpoint cut waits for the live trainers, so liveness matters in asp too.
  client_options.heartbeat_interval = config.train.sync.trainer_timeout / 5;
  client_options.row_format = config.train.wire_fp16 ? RowFormat::kF16 : RowFormat::kF32;
  ASSIGN_OR_RETURN(client_options.security, ResolveSecurity(flags.security, config.security));
  if (client_options.scheduler_endpoint.find('*') != std::string::npos) {
    return InvalidArgument("--scheduler is required (the config's scheduler address is a "
                           "wildcard)");
  }
  return client_options;
}

// The run's summary record, into the run log and the --summary-json file (where asked).
Status WriteSummary(const TrainFlags& flags, local::RunLog* run_log,
                    const std::string& summary_json) {
  if (run_log != nullptr) RETURN_IF_ERROR(run_log->Summary(summary_json));
  if (!flags.summary_json.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(flags.summary_json, summary_json));
  }
  return Status::Ok();
}

// With --restore: the trainer and the servers resume from that checkpoint (or the newest in that
// folder).
Status RestoreIfAsked(const TrainFlags& flags, trainer::Trainer& loop) {
  if (flags.restore.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(const std::string checkpoint, FindCheckpoint(flags.restore));
  RETURN_IF_ERROR(loop.Restore(checkpoint));
  std::printf("ember train: resumed from %s after step %u\n", checkpoint.c_str(),
              loop.completed_steps());
  return Status::Ok();
}

// The servers' figures for the summary; none from a cluster that no longer answers (a server
// drained or dead only leaves the per-server lines out).
std::vector<ServerStats> ServerFigures(ps::Client& client) {
  auto servers = client.Stats();
  if (servers.ok()) return std::move(*servers);
  std::fprintf(stderr, "ember train: no server figures: %s\n",
               servers.status().ToString().c_str());
  return {};
}

// "ember train: trainer 0/1 (asp, dense weights local), 2 servers, ...; batch 4096, 300 steps".
void PrintRunHeader(const trainer::TrainOptions& train, const RoutingTable& routing,
                    ps::Client& client, trainer::Backend& backend, const TrainData& data) {
  std::printf(
      "ember train: trainer %u/%u (%s, dense weights %s), %zu servers, %u partitions, "
      "%zu tables; %s backend; %s; batch %u, %u steps\n",
      train.rank, train.sync.trainers, std::string(SyncModeName(train.sync.mode)).c_str(),
      train.dense_on_servers() ? "on the servers" : "local", routing.servers.size(),
      routing.num_partitions, client.tables().size(), std::string(backend.name()).c_str(),
      data.source->Describe().c_str(), train.batch_size, data.steps);
  std::fflush(stdout);
}

// The run log of --log-jsonl; none without it.
Result<std::unique_ptr<local::RunLog>> OpenRunLog(const TrainFlags& flags) {
  if (flags.log_jsonl.empty()) return std::unique_ptr<local::RunLog>();
  return local::RunLog::Open(flags.log_jsonl);
}

// The model a run ends with and where it lives: the run's own client, backend and data set, or,
// after an early-stopping retrain, those of the retrain (which `retrained` holds).
struct TrainedModel {
  trainer::TrainSummary summary;  // of the training that made the model
  ps::Client* client = nullptr;
  trainer::Backend* backend = nullptr;
  std::shared_ptr<trainer::InteractionDataset> dataset;
  std::optional<local::EarlyStoppingReport> early_stopping;
  EarlyStoppedModel retrained;
};

// Runs the training `run` describes, with early stopping when the config asks for it.
Result<TrainedModel> TrainModel(const EarlyStoppingRun& run) {
  TrainedModel model;
  model.client = run.client;
  model.backend = run.backend;
  model.dataset = run.dataset;
  if (!run.config->train.early_stopping.enabled()) {
    ASSIGN_OR_RETURN(model.summary, run.loop->Run(run.steps, [&](const trainer::WindowStats& w) {
      run.on_window(w, run.steps);
    }));
    return model;
  }
  if (!run.dataset) return InvalidArgument("train.early_stopping needs interaction data");
  ASSIGN_OR_RETURN(model.retrained, TrainWithEarlyStopping(run));
  model.summary = model.retrained.summary;
  model.early_stopping = model.retrained.report;
  if (model.retrained.client) {
    model.client = model.retrained.client.get();
    model.backend = model.retrained.backend.get();
    model.dataset = model.retrained.dataset;
  }
  return model;
}

}  // namespace

int RunTrain(const TrainFlags& flags) {
  SetUpLogging("trainer");
  auto config = LoadConfig(flags.config);
  if (!config.ok()) return PrintError("train", config.status(), 2);
  if (Status trains = local::RequireTraining(*config); !trains.ok()) {
    return PrintError("train", trains, 2);
  }
  trainer::TrainOptions& train = config->train;
  train.rank = flags.rank;
  if (train.rank >= train.sync.trainers) {
    return Fail(InvalidArgument("--rank " + std::to_string(train.rank) + " is not below the " +
                                std::to_string(train.sync.trainers) + " trainers of the run"));
  }
  // Bound before anything connects, so that a port in use fails at once.
  auto metrics = StartMetrics("trainer", flags.metrics_bind, config->metrics.trainers, train.rank);
  if (!metrics.ok()) return PrintError("train", metrics.status(), 2);
  std::shared_ptr<trainer::TrainerMetrics> trainer_metrics;
  if (*metrics) {
    trainer_metrics = std::make_shared<trainer::TrainerMetrics>(train.batch_size, train.rank);
    (*metrics)->Add(trainer_metrics);
  }
  auto options = TrainerClientOptions(flags, *config);
  if (!options.ok()) return PrintError("train", options.status(), 2);
  ps::ClientOptions& client_options = *options;

  // The log and the data first: a bad file path should fail before anything connects.
  auto opened_log = OpenRunLog(flags);
  if (!opened_log.ok()) return PrintError("train", opened_log.status(), 2);
  std::unique_ptr<local::RunLog> run_log = std::move(*opened_log);
  auto data = LoadTrainData(config->data, config->model, train);
  if (!data.ok()) return Fail(data.status());
  const uint32_t steps = data->steps;
  auto client = ps::Client::Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  auto backend = trainer::MakeBackend(train.backend, config->model);
  if (!backend.ok()) return Fail(backend.status());
  auto loop = trainer::Trainer::Create(client->get(), backend->get(), data->source.get(),
                                       config->model, train);
  if (!loop.ok()) return Fail(loop.status());
  if (Status restored = RestoreIfAsked(flags, **loop); !restored.ok()) return Fail(restored);

  const RoutingTable routing = (*client)->routing();
  PrintRunHeader(train, routing, **client, **backend, *data);
  // Each progress window is printed and logged; a log that cannot be written is reported once.
  bool log_failed = false;
  auto on_window = [&](const trainer::WindowStats& w, uint32_t window_steps) {
    if (trainer_metrics) trainer_metrics->Observe(w);
    PrintWindow(w, window_steps, train.batch_size);
    if (!run_log || log_failed) return;
    if (Status logged = run_log->Window(w, window_steps, train.batch_size); !logged.ok()) {
      std::fprintf(stderr, "ember train: %s\n", logged.ToString().c_str());
      log_failed = true;
    }
  };
  EarlyStoppingRun run{&*config, &client_options, client->get(), backend->get(), loop->get(),
                       data->dataset, steps, on_window};
  auto model = TrainModel(run);
  if (!model.ok()) return Fail(model.status());
  const trainer::TrainSummary& summary = model->summary;

  // The training is done either way: a server that does not answer (one that was drained or
  // died) only leaves the per-server lines out.
  const std::vector<ServerStats> servers = ServerFigures(*model->client);
  PrintSummary(summary, train.batch_size, servers, routing.servers);
  std::optional<local::EvalFigures> eval;
  if (model->dataset) {
    auto figures = Evaluate(*model->client, *model->backend, *model->dataset, *config);
    if (!figures.ok()) return Fail(figures.status());
    eval = *figures;
  }
  std::fflush(stdout);
  const std::string summary_json =
      local::TrainSummaryJson(summary, servers, eval, model->early_stopping);
  if (Status written = WriteSummary(flags, run_log.get(), summary_json); !written.ok()) {
    return Fail(written);
  }
  return 0;
}

}  // namespace ember::app
