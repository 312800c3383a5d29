// Early stopping end to end (`ember cluster` runs on a small interaction file): the evaluations
// during one run equal the validation figures of brute-force runs of each length, the chosen
// epoch is theirs, the restored state is the best one, and a retrain equals a plain run of the
// chosen length on the whole training split.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/child_process.h"
#include "tests/test_util.h"

namespace ember {
namespace {

using std::chrono::seconds;
using Json = nlohmann::json;

constexpr const char* kConfig = R"(
cluster:
  servers: 1
  server_threads: 1
  partitions: 16
tables:
  - {name: user, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}
  - {name: item, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}
model:
  embedding_dim: 8
  user_slots: 1
  item_slots: 1
  hidden: [16]
  output_dim: 8
  temperature: 0.2
  learning_rate: 0.003
data:
  kind: interactions
  interactions:
    path: interactions.tsv
    delimiter: "\t"
    user: 0
    item: 1
    rating: -1
    timestamp: 2
    negatives: 20
    seed: 5
    validation: true
train:
  epochs: 6
  batch_size: 64
  backend: cpu
  log_every: 1000
  user_tables: [user]
  item_tables: [item]
)";

// 150 users in 6 taste groups, each with 14 interactions mostly inside its group's items.
void WriteInteractions(const std::string& path) {
  std::mt19937 rng(11);
  std::ofstream out(path);
  for (int user = 0; user < 150; ++user) {
    for (int t = 0; t < 14; ++t) {
      const bool in_group = std::uniform_real_distribution<double>(0, 1)(rng) < 0.8;
      const int item = in_group ? (user % 6) + 6 * std::uniform_int_distribution<int>(0, 9)(rng)
                                : std::uniform_int_distribution<int>(0, 59)(rng);
      out << "u" << user << "\ti" << item << "\t" << t << "\n";
    }
  }
}

class EarlyStoppingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteInteractions(dir_.path() + "/interactions.tsv");
    std::ofstream(config_) << kConfig;
  }

  // Runs `ember cluster` with the overrides; the trainer's JSON summary.
  Json Run(const std::vector<std::string>& overrides) {
    const std::string summary = dir_.path() + "/summary-" + std::to_string(++runs_) + ".json";
    std::vector<std::string> argv = {EMBER_BINARY, "cluster", "--config", config_,
                                     "--summary-json", summary};
    for (const std::string& o : overrides) argv.insert(argv.end(), {"--set", o});
    const std::string log = dir_.path() + "/run-" + std::to_string(runs_) + ".log";
    ChildProcess cluster(argv, log);
    EXPECT_EQ(cluster.WaitExit(seconds(300)), 0) << testing::ReadFile(log);
    Json json = Json::parse(testing::ReadFile(summary), nullptr, false);
    EXPECT_TRUE(json.is_object()) << testing::ReadFile(log);
    return json.is_object() ? json : Json::object();
  }

  testing::TempDir dir_;
  const std::string config_ = dir_.path() + "/job.yaml";
  int runs_ = 0;
};

TEST_F(EarlyStoppingTest, PicksTheEpochABruteForceRunWould) {
  // One run evaluating after every epoch and never stopping early.
  const Json stopping = Run({"train.early_stopping.every_epochs=1",
                             "train.early_stopping.patience=100",
                             "train.early_stopping.then=keep_last"})["early_stopping"];
  ASSERT_TRUE(stopping.is_object());
  const Json& evaluations = stopping["evaluations"];
  ASSERT_EQ(evaluations.size(), 6u) << stopping;

  // Brute force: a fresh run of each length, validated once at its end.
  int best_epoch = 0;
  double best_hr = -1, best_ndcg = -1;
  for (int epochs = 1; epochs <= 6; ++epochs) {
    const Json eval = Run({"train.epochs=" + std::to_string(epochs)})["eval"];
    ASSERT_TRUE(eval.contains("validation")) << eval;
    const double hr = eval["validation"]["hit_rate"], ndcg = eval["validation"]["ndcg"];
    // The same model, so the same figures, bit for bit.
    EXPECT_EQ(hr, evaluations[epochs - 1]["hit_rate"].get<double>()) << "epoch " << epochs;
    EXPECT_EQ(ndcg, evaluations[epochs - 1]["ndcg"].get<double>()) << "epoch " << epochs;
    if (hr > best_hr || (hr == best_hr && ndcg > best_ndcg)) {
      best_epoch = epochs;
      best_hr = hr;
      best_ndcg = ndcg;
    }
  }
  EXPECT_EQ(std::lround(stopping["best"]["epoch"].get<double>()), best_epoch) << stopping;
  EXPECT_EQ(stopping["best"]["hit_rate"].get<double>(), best_hr);
}

TEST_F(EarlyStoppingTest, PatienceStopsAndTheBestStateComesBack) {
  const Json json = Run({"train.epochs=30", "train.early_stopping.every_epochs=1",
                         "train.early_stopping.patience=2"});
  const Json& stopping = json["early_stopping"];
  ASSERT_TRUE(stopping.is_object()) << json;
  const Json& evaluations = stopping["evaluations"];
  ASSERT_FALSE(evaluations.empty());
  // It stopped two evaluations after the best one (or ran out of epochs).
  const int best_step = stopping["best"]["step"];
  size_t best_index = 0;
  while (evaluations[best_index]["step"] != best_step) ++best_index;
  EXPECT_EQ(evaluations.back()["step"], stopping["stopped_after_step"]);
  if (stopping["stopped_after_step"].get<int>() < json["steps"].get<int>()) {
    EXPECT_EQ(evaluations.size(), best_index + 3) << stopping;
  }
  // The model evaluated at the end is the best one: its validation figures are the best's.
  EXPECT_EQ(json["eval"]["validation"]["hit_rate"], stopping["best"]["hit_rate"]) << json;
  EXPECT_EQ(json["eval"]["validation"]["ndcg"], stopping["best"]["ndcg"]) << json;
  EXPECT_EQ(stopping["final_steps"], best_step);
}

TEST_F(EarlyStoppingTest, RetrainEqualsAPlainRunOfTheChosenLength) {
  const Json retrained = Run({"train.early_stopping.every_epochs=1",
                              "train.early_stopping.patience=2",
                              "train.early_stopping.then=retrain"});
  const Json& stopping = retrained["early_stopping"];
  ASSERT_TRUE(stopping.is_object()) << retrained;
  const int steps = stopping["final_steps"];
  ASSERT_GT(steps, 0);
  EXPECT_EQ(retrained["steps"], steps);
  // The whole training split (no validation items held out), trained as long from scratch.
  const Json plain = Run({"data.interactions.validation=false", "train.epochs=0",
                          "train.steps=" + std::to_string(steps)});
  EXPECT_FALSE(retrained["eval"].contains("validation"));
  EXPECT_EQ(retrained["eval"]["hit_rate"], plain["eval"]["hit_rate"]) << retrained << plain;
  EXPECT_EQ(retrained["eval"]["ndcg"], plain["eval"]["ndcg"]);
}

TEST_F(EarlyStoppingTest, RefusesToRunWithoutAValidationSplit) {
  const std::string log = dir_.path() + "/refused.log";
  ChildProcess cluster({EMBER_BINARY, "cluster", "--config", config_, "--set",
                        "data.interactions.validation=false", "--set",
                        "train.early_stopping.every_epochs=1"},
                       log);
  EXPECT_NE(cluster.WaitExit(seconds(60)), 0);
  EXPECT_NE(testing::ReadFile(log).find("needs data.interactions.validation: true"),
            std::string::npos)
      << testing::ReadFile(log);
}

}  // namespace
}  // namespace ember
