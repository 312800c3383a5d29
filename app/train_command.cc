// `ember train`: one trainer process: connects to a cluster, trains, evaluates, and reports.
#include <cmath>
#include <cstdio>
#include <sstream>

#include "app/command_support.h"
#include "app/commands.h"
#include "app/process_setup.h"
#include "ps/client/checkpoint.h"
#include "ps/client/client.h"
#include "trainer/backend.h"
#include "trainer/data_config.h"
#include "trainer/interaction_source.h"
#include "trainer/ranking_eval.h"
#include "trainer/ranking_metrics.h"
#include "trainer/synthetic_source.h"
#include "trainer/trainer.h"

namespace ember::app {
namespace {

int Fail(const Status& status) {
  std::fprintf(stderr, "ember train: %s\n", status.ToString().c_str());
  return 1;
}

// Synthetic data: trainer `rank` draws from its own seed stream. (Interaction files are shared
// sample by sample instead; see InteractionSource.)
void ShareData(uint32_t rank, uint32_t trainers, trainer::DataConfig* data) {
  if (trainers > 1) data->synthetic.seed += 0x9E3779B97F4A7C15ull * rank;
}

void PrintWindow(const trainer::WindowStats& w, uint32_t steps) {
  std::printf("step %5u/%u  loss %.4f  %9.0f samples/s  pull %6.1f ms  compute %7.1f ms  "
              "push %6.1f ms  wait %6.1f ms  busy %3.0f%%  rows/step %.0f\n",
              w.last_step, steps, w.loss, w.samples_per_second, w.pull_ms, w.compute_ms,
              w.push_ms, w.wait_ms, 100.0 * w.device_busy, w.unique_keys);
  std::fflush(stdout);
}

// Mean time per step spent waiting for the other trainers.
double WaitPerStep(const trainer::TrainSummary& s) {
  double wait = 0;
  for (const auto& w : s.windows) wait += w.wait_ms * (w.last_step - w.first_step + 1);
  return wait / std::max<uint32_t>(s.steps, 1);
}

struct EvalFigures {
  trainer::RankingResult model;
  trainer::RankingResult popularity;
};

std::string SummaryJson(const trainer::TrainSummary& s,
                        const std::vector<ServerStats>& servers,
                        const std::optional<EvalFigures>& eval) {
  std::ostringstream j;
  j.precision(6);
  j << "{\n  \"steps\": " << s.steps << ",\n  \"samples\": " << s.samples
    << ",\n  \"seconds\": " << s.seconds << ",\n  \"samples_per_second\": "
    << s.samples_per_second << ",\n  \"wait_ms_per_step\": " << WaitPerStep(s)
    << ",\n  \"backend\": \"" << s.backend
    << "\",\n  \"loss_start\": " << s.first_window.loss
    << ",\n  \"loss_end\": " << s.last_window.loss << ",\n  \"servers\": [";
  for (size_t i = 0; i < servers.size(); ++i) {
    TableStats sum;  // over the server's tables
    for (const auto& t : servers[i].tables) {
      sum.rows += t.rows;
      sum.bytes += t.bytes;
      sum.resident_rows += t.resident_rows;
      sum.disk_bytes += t.disk_bytes;
      sum.hits += t.hits;
      sum.misses += t.misses;
      sum.evictions += t.evictions;
      sum.not_admitted += t.not_admitted;
      sum.updates_dropped += t.updates_dropped;
      sum.expired += t.expired;
    }
    j << (i ? ", " : "") << "{\"id\": " << servers[i].server_id << ", \"rows\": " << sum.rows
      << ", \"bytes\": " << sum.bytes << ", \"resident_rows\": " << sum.resident_rows
      << ", \"disk_bytes\": " << sum.disk_bytes << ", \"hits\": " << sum.hits
      << ", \"misses\": " << sum.misses << ", \"evictions\": " << sum.evictions
      << ", \"not_admitted\": " << sum.not_admitted
      << ", \"updates_dropped\": " << sum.updates_dropped << ", \"expired\": " << sum.expired
      << ", \"keys_pulled\": " << servers[i].keys_pulled
      << ", \"keys_pushed\": " << servers[i].keys_pushed << ", \"errors\": " << servers[i].errors
      << "}";
  }
  j << "]";
  if (eval) {
    j << ",\n  \"eval\": {\"users\": " << eval->model.cases
      << ", \"hit_rate\": " << eval->model.hit_rate << ", \"ndcg\": " << eval->model.ndcg
      << ", \"popularity_hit_rate\": " << eval->popularity.hit_rate
      << ", \"popularity_ndcg\": " << eval->popularity.ndcg << "}";
  }
  j << "\n}\n";
  return j.str();
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
  std::printf("  per step    pull %.1f ms, compute %.1f ms, push %.1f ms, other trainers "
              "%.1f ms (waits, means)\n",
              pull / steps, compute / steps, push / steps, WaitPerStep(s));
  for (const ServerStats& server : servers) {
    uint64_t rows = 0, bytes = 0;
    for (const auto& t : server.tables) {
      rows += t.rows;
      bytes += t.bytes;
    }
    const std::string endpoint =
        server.server_id < endpoints.size() ? endpoints[server.server_id].endpoint : "?";
    std::printf("  server %u    %s: %llu rows in %zu tables (%.1f MiB), %u partitions, "
                "%llu keys pulled, %llu pushed, %llu errors\n",
                server.server_id, endpoint.c_str(), static_cast<unsigned long long>(rows),
                server.tables.size(), bytes / 1048576.0, server.partitions_owned,
                static_cast<unsigned long long>(server.keys_pulled),
                static_cast<unsigned long long>(server.keys_pushed),
                static_cast<unsigned long long>(server.errors));
  }
}

}  // namespace

int TrainCommand(int argc, char** argv) {
  std::vector<FlagSpec> known = {
      {"config", "FILE", "job config (YAML): tables, model, data, train"},
      {"rank", "R", "this trainer's share of the data, in [0, trainers) (default 0)"},
      {"scheduler", "ENDPOINT", "the scheduler's endpoint (default: cluster.scheduler)"},
      {"steps", "N", "override train.steps"},
      {"epochs", "N", "override train.epochs (interaction data)"},
      {"batch-size", "N", "override train.batch_size"},
      {"backend", "KIND", "override train.backend: cpu, cuda or auto"},
      {"wire-fp16", "", "rows and gradients travel as fp16 (train.wire_fp16)"},
      {"pipeline", "", "pull the next step's rows while this step computes (train.pipeline)"},
      {"name", "NAME", "trainer name to register under (default: trainer)"},
      {"data-root", "DIR", "folder that relative data paths resolve against (default: the config's)"},
      {"summary-json", "FILE", "also write the final figures as JSON"},
      {"restore", "DIR", "resume from a checkpoint (or the newest complete one under DIR): rank 0 "
                         "loads the servers, every trainer its step, data position and dense "
                         "state; training continues to the same total of steps"},
  };
  for (FlagSpec& spec : SyncFlagSpecs()) known.push_back(std::move(spec));
  int exit_code = 0;
  auto flags = ParseCommandFlags(argc, argv, "ember train --config FILE --scheduler ENDPOINT",
                                 "Runs one trainer against a running cluster: pulls rows, trains "
                                 "the two-tower model, pushes gradients, then reports.",
                                 known, &exit_code);
  if (!flags) return exit_code;
  SetUpLogging("trainer");
  auto config = LoadConfigFlag(*flags, "train");
  if (!config) return 2;
  trainer::TrainOptions& train = config->train;
  for (const char* name : {"steps", "epochs", "batch-size"}) {
    auto value = flags->GetUint(name);
    if (!value.ok()) return Fail(value.status());
    if (!value->has_value()) continue;
    uint32_t& target = std::string(name) == "steps"    ? train.steps
                       : std::string(name) == "epochs" ? train.epochs
                                                       : train.batch_size;
    target = static_cast<uint32_t>(**value);
    if (std::string(name) == "steps") train.epochs = 0;
  }
  train.backend = flags->Get("backend", train.backend);
  if (flags->Has("pipeline")) train.pipeline = true;

  auto rank = flags->GetUint("rank");
  if (!rank.ok()) return Fail(rank.status());
  train.rank = static_cast<uint32_t>(rank->value_or(0));
  if (train.rank >= train.sync.trainers) {
    return Fail(InvalidArgument("--rank " + std::to_string(train.rank) + " is not below the " +
                                std::to_string(train.sync.trainers) + " trainers of the run"));
  }
  ShareData(train.rank, train.sync.trainers, &config->data);

  ps::ClientOptions client_options;
  client_options.scheduler_endpoint = flags->Get("scheduler", config->cluster.scheduler);
  client_options.name = flags->Get("name", train.sync.trainers > 1
                                               ? "trainer-" + std::to_string(train.rank)
                                               : std::string("trainer"));
  // In every mode: a checkpoint cut waits for the live trainers, so liveness matters in asp too.
  client_options.heartbeat_interval = train.sync.trainer_timeout / 5;
  if (flags->Has("wire-fp16")) train.wire_fp16 = true;
  client_options.row_format = train.wire_fp16 ? RowFormat::kF16 : RowFormat::kF32;
  if (client_options.scheduler_endpoint.find('*') != std::string::npos) {
    std::fprintf(stderr, "ember train: --scheduler is required (the config's scheduler address "
                         "is a wildcard)\n");
    return 2;
  }

  // Data first: a bad file path should fail before anything connects.
  std::shared_ptr<trainer::InteractionDataset> dataset;
  std::unique_ptr<trainer::DataSource> data;
  if (config->data.kind == "interactions") {
    auto loaded = trainer::LoadInteractions(config->data.interactions);
    if (!loaded.ok()) return Fail(loaded.status());
    dataset = *loaded;
    data = std::make_unique<trainer::InteractionSource>(dataset, config->data.interactions.seed,
                                                         train.rank, train.sync.trainers);
  } else {
    auto made = trainer::MakeDataSource(config->data);
    if (!made.ok()) return Fail(made.status());
    data = std::move(*made);
  }
  uint32_t steps = train.steps;
  if (train.epochs > 0) {
    if (!dataset) return Fail(InvalidArgument("train.epochs needs interaction data"));
    // This trainer's share: every trainers-th sample of each epoch, from its rank on.
    const double share = std::ceil(static_cast<double>(dataset->num_train() - train.rank) /
                                   train.sync.trainers);
    steps = static_cast<uint32_t>(std::ceil(train.epochs * share / train.batch_size));
  }

  auto client = ps::Client::Connect(client_options);
  if (!client.ok()) return Fail(client.status());
  auto backend = trainer::MakeBackend(train.backend, config->model);
  if (!backend.ok()) return Fail(backend.status());
  auto loop = trainer::Trainer::Create(client->get(), backend->get(), data.get(), config->model,
                                       train);
  if (!loop.ok()) return Fail(loop.status());
  if (flags->Has("restore")) {
    auto checkpoint = FindCheckpoint(flags->Get("restore"));
    if (!checkpoint.ok()) return Fail(checkpoint.status());
    if (Status restored = (*loop)->Restore(*checkpoint); !restored.ok()) return Fail(restored);
    std::printf("ember train: resumed from %s after step %u\n", checkpoint->c_str(),
                (*loop)->completed_steps());
  }

  const RoutingTable routing = (*client)->routing();
  std::printf("ember train: trainer %u/%u (%s, dense weights %s), %zu servers, %u partitions, "
              "%zu tables; %s backend; %s; batch %u, %u steps\n",
              train.rank, train.sync.trainers, std::string(SyncModeName(train.sync.mode)).c_str(),
              train.dense_on_servers() ? "on the servers" : "local", routing.servers.size(),
              routing.num_partitions, (*client)->tables().size(),
              std::string((*backend)->name()).c_str(), data->Describe().c_str(),
              train.batch_size, steps);
  std::fflush(stdout);
  auto summary = (*loop)->Run(steps, [&](const trainer::WindowStats& w) { PrintWindow(w, steps); });
  if (!summary.ok()) return Fail(summary.status());

  // The training is done either way: a server that does not answer (one that was drained or
  // died) only leaves the per-server lines out.
  auto servers = (*client)->Stats();
  if (!servers.ok()) {
    std::fprintf(stderr, "ember train: no server figures: %s\n",
                 servers.status().ToString().c_str());
    servers = std::vector<ServerStats>{};
  }
  PrintSummary(*summary, train.batch_size, *servers, routing.servers);

  std::optional<EvalFigures> eval;
  if (dataset) {
    auto model = trainer::EvaluateRanking(**client, **backend, *dataset, config->model, train);
    if (!model.ok()) return Fail(model.status());
    EvalFigures figures{*model, trainer::EvaluatePopularity(*dataset, train.eval_k)};
    std::printf("  evaluation  leave-one-out, %zu users, %u sampled negatives each:\n"
                "              ember        HR@%u %.4f  NDCG@%u %.4f\n"
                "              most-popular HR@%u %.4f  NDCG@%u %.4f\n",
                figures.model.cases, config->data.interactions.negatives, train.eval_k,
                figures.model.hit_rate, train.eval_k, figures.model.ndcg, train.eval_k,
                figures.popularity.hit_rate, train.eval_k, figures.popularity.ndcg);
    eval = figures;
  }
  std::fflush(stdout);
  if (flags->Has("summary-json")) {
    Status written =
        WriteFileAtomically(flags->Get("summary-json"), SummaryJson(*summary, *servers, eval));
    if (!written.ok()) return Fail(written);
  }
  return 0;
}

}  // namespace ember::app
