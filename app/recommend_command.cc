// `ember recommend`: two-tower retrieval with a trained model (trainer/retrieval/): the top K items
// for users, from an index of the item tower's outputs; or, with --evaluate, how well and how fast
// it retrieves.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>

#include "app/commands.h"
#include "app/config_flags.h"
#include "common/checkpoint_layout.h"
#include "common/file_io.h"
#include "ps/client/client.h"
#include "ps/replica/replica_store.h"
#include "trainer/data_config.h"
#include "trainer/retrieval/recommender.h"
#include "trainer/retrieval/retrieval_eval.h"
#include "trainer/trainer_checkpoint.h"

namespace ember::app {
namespace {

constexpr CommandText kRecommendCommand = {
    .name = "recommend",
    .summary = "the top K items for users from a trained two-tower model, over an ANN index",
    .usage = "ember recommend --config JOB.yaml --checkpoint DIR (--user ID... | --evaluate) "
             "[--scheduler ENDPOINT] [options]",
    .description =
        "Encodes every item of the config's interaction data with the item tower (the dense "
        "weights of the checkpoint's trainer file) into an HNSW index (FAISS), then answers "
        "each --user with its K best items, the items it trained on left out. Rows come from "
        "the checkpoint, or with --scheduler from a running cluster or serving replica (read "
        "only). --evaluate reports the index's recall@K against exact search, the full-catalogue "
        "Recall@K of the served items beside the trainer's own, and queries per second.",
};

void AddRecommendFlags(CLI::App* command, RecommendFlags* flags) {
  AddConfigFlags(command, &flags->config, /*required=*/true);
  AddDataRootFlag(command, &flags->config);
  AddValue(command, "--checkpoint", &flags->checkpoint, "DIR",
           "a checkpoint of the run: its trainer file's dense weights (and its rows, without "
           "--scheduler)")
      ->required();
  AddValue(command, "--scheduler", &flags->scheduler, "ENDPOINT",
           "read rows from this cluster or replica (lookups) instead of the checkpoint");
  AddValue(command, "--user", &flags->users, "ID", "a user's id in the data (repeatable)");
  command->add_flag("--evaluate", flags->evaluate, "measure retrieval quality and speed");
  AddCount(command, "--k", &flags->k, "K", "items per user (default 10)");
  AddCount(command, "--ef-search", &flags->index.ef_search, "N",
           "HNSW candidates per search: recall against speed (default 128)");
  AddCount(command, "--queries", &flags->queries, "N", "--evaluate: queries timed (default 2000)");
  AddValue(command, "--json", &flags->json, "FILE", "also write the answer as JSON");
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
}

// Reads rows from a running cluster or replica, as a reader.
Result<trainer::TowerBatch::RowReader> ClusterRows(const RecommendFlags& flags,
                                                   std::shared_ptr<ps::Client>* client) {
  ps::ClientOptions options;
  options.scheduler_endpoint = flags.scheduler;
  options.name = "recommend";
  options.read_only = true;
  ASSIGN_OR_RETURN(options.security, ResolveSecurity(flags.security));
  ASSIGN_OR_RETURN(std::unique_ptr<ps::Client> connected, ps::Client::Connect(std::move(options)));
  *client = std::move(connected);
  return trainer::TowerBatch::RowReader(
      [c = *client](const std::string& table, std::span<const uint64_t> keys,
                    std::span<float> out) { return c->Lookup(table, keys, out).Wait(); });
}

// Reads rows from the checkpoint's copy in this process.
Result<trainer::TowerBatch::RowReader> CheckpointRows(const local::ClusterConfig& config,
                                                      const std::string& checkpoint,
                                                      std::shared_ptr<ps::ReplicaStore>* store) {
  ASSIGN_OR_RETURN(std::unique_ptr<ps::ReplicaStore> made,
                   ps::ReplicaStore::Create(config.tables, config.cluster.partitions));
  ASSIGN_OR_RETURN(std::string dir, FindCheckpoint(checkpoint));
  RETURN_IF_ERROR(made->Load(dir));
  *store = std::move(made);
  return trainer::TowerBatch::RowReader(
      [s = *store](const std::string& table, std::span<const uint64_t> keys,
                   std::span<float> out) {
        return s->Lookup(table, keys, out, MissingRows::kInitial, {});
      });
}

Result<std::unique_ptr<trainer::Backend>> TrainedBackend(const local::ClusterConfig& config,
                                                         const std::string& checkpoint) {
  ASSIGN_OR_RETURN(std::string dir, FindCheckpoint(checkpoint));
  ASSIGN_OR_RETURN(trainer::TrainerCheckpoint trained,
                   trainer::ReadTrainerCheckpoint(TrainerFilePath(dir, 0), config.model));
  ASSIGN_OR_RETURN(std::unique_ptr<trainer::Backend> backend,
                   trainer::MakeBackend("cpu", config.model));
  RETURN_IF_ERROR(backend->SetWeights(trained.dense.weights));
  return backend;
}

int Answer(const RecommendFlags& flags, trainer::Recommender& recommender) {
  const trainer::InteractionDataset& dataset = recommender.dataset();
  std::map<std::string, uint32_t> user_index;
  for (uint32_t u = 0; u < dataset.num_users(); ++u) user_index[dataset.user_id(u)] = u;
  nlohmann::json answers = nlohmann::json::array();
  for (size_t i = 0; i < flags.users.size(); ++i) {
    auto found = user_index.find(flags.users[i]);
    if (found == user_index.end()) {
      return PrintError("recommend", NotFound("no user '" + flags.users[i] + "' in the data"), 2);
    }
    auto hits = recommender.Recommend(found->second, flags.k, /*exclude_trained=*/true);
    if (!hits.ok()) return PrintError("recommend", hits.status());
    nlohmann::json items = nlohmann::json::array();
    for (size_t h = 0; h < hits->items.size(); ++h) {
      const std::string& item = dataset.item_id(hits->items[h]);
      std::printf("%s\t%zu\t%s\t%.6f\n", flags.users[i].c_str(), h + 1, item.c_str(),
                  static_cast<double>(hits->scores[h]));
      items.push_back({{"item", item}, {"score", hits->scores[h]}});
    }
    answers.push_back({{"user", flags.users[i]}, {"items", items}});
  }
  if (!flags.json.empty()) {
    const std::string json = nlohmann::json{{"recommendations", answers}}.dump(2) + "\n";
    if (Status written = WriteFileAtomically(flags.json, json); !written.ok()) {
      return PrintError("recommend", written);
    }
  }
  return 0;
}

int Evaluate(const RecommendFlags& flags, trainer::Recommender& recommender) {
  auto quality = trainer::EvaluateRetrievalQuality(recommender, flags.k);
  if (!quality.ok()) return PrintError("recommend", quality.status());
  auto speed = trainer::MeasureRetrievalSpeed(recommender, flags.k, flags.queries);
  if (!speed.ok()) return PrintError("recommend", speed.status());
  const nlohmann::json figures = {
      {"k", flags.k},
      {"cases", quality->cases},
      {"items", recommender.index()->size()},
      {"ann_recall", quality->ann_recall},
      {"served_recall", quality->served_recall},
      {"exact_recall", quality->exact_recall},
      {"trainer_recall", quality->trainer_recall},
      {"queries", speed->queries},
      {"queries_per_second", speed->queries_per_second},
      {"p50_ms", speed->p50_ms},
      {"p99_ms", speed->p99_ms},
      {"search_p50_ms", speed->search_p50_ms},
      {"search_p99_ms", speed->search_p99_ms}};
  const std::string text = figures.dump(2) + "\n";
  std::printf("%s", text.c_str());
  if (!flags.json.empty()) {
    if (Status written = WriteFileAtomically(flags.json, text); !written.ok()) {
      return PrintError("recommend", written);
    }
  }
  return 0;
}

}  // namespace

Command MakeRecommendCommand(CLI::App& ember) {
  return MakeCommand(ember, kRecommendCommand, AddRecommendFlags, RunRecommend);
}

int RunRecommend(const RecommendFlags& flags) {
  if (flags.users.empty() == !flags.evaluate) {
    return PrintError("recommend", InvalidArgument("give --user IDs or --evaluate (one of them)"),
                      2);
  }
  auto config = LoadConfig(flags.config);
  if (!config.ok()) return PrintError("recommend", config.status(), 2);
  if (config->data.kind != "interactions") {
    return PrintError("recommend", InvalidArgument("the config's data must be interactions"), 2);
  }
  auto dataset = trainer::LoadInteractions(config->data.interactions);
  if (!dataset.ok()) return PrintError("recommend", dataset.status(), 2);
  auto backend = TrainedBackend(*config, flags.checkpoint);
  if (!backend.ok()) return PrintError("recommend", backend.status(), 2);
  std::shared_ptr<ps::Client> client;
  std::shared_ptr<ps::ReplicaStore> store;
  auto reader = flags.scheduler.empty() ? CheckpointRows(*config, flags.checkpoint, &store)
                                        : ClusterRows(flags, &client);
  if (!reader.ok()) return PrintError("recommend", reader.status());
  auto recommender = trainer::Recommender::Create(std::move(*reader), std::move(*backend),
                                                  **dataset, config->model, config->train,
                                                  flags.index);
  if (!recommender.ok()) return PrintError("recommend", recommender.status());
  return flags.evaluate ? Evaluate(flags, **recommender) : Answer(flags, **recommender);
}

}  // namespace ember::app
