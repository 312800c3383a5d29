// `ember tune` end to end on a small interaction file: the table, the chosen config, the JSON
// report, trials that never see the test split, a choice that corrupting every test item cannot
// change, and trials of several seeds judged by their means.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/child_process.h"
#include "local/cluster_config.h"
#include "tests/test_util.h"

namespace ember {
namespace {

using std::chrono::seconds;
using Json = nlohmann::json;

constexpr const char* kConfig = R"(
cluster: {servers: 1, server_threads: 1, partitions: 16}
tables:
  - {name: user, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}
  - {name: item, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}
model: {embedding_dim: 8, user_slots: 1, item_slots: 1, hidden: [16], output_dim: 8,
        temperature: 0.2, learning_rate: 0.003}
data:
  kind: interactions
  interactions: {path: ratings.tsv, delimiter: "\t", user: 0, item: 1, rating: 2, timestamp: 3,
                 min_rating: 3, negatives: 20, seed: 5}
train: {epochs: 4, batch_size: 64, backend: cpu, log_every: 1000, user_tables: [user],
        item_tables: [item]}
)";

// 150 users in 6 taste groups. Each rated two items low first (T and C), then rated 12 items of
// mostly its group high, and last rated T high: T is its test item. With `corrupt_tests` that
// last line names C instead. Either way C and T are items the user interacted with, neither is a
// training positive, and the training split, validation items and their negatives are the same:
// only the test items differ.
void WriteRatings(const std::string& path, bool corrupt_tests) {
  std::mt19937 rng(17);
  std::ofstream out(path);
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int user = 0; user < 150; ++user) {
    const int test = (user % 6) + 6 * draw(0, 9);
    int corrupt = draw(0, 59);
    while (corrupt == test) corrupt = draw(0, 59);
    out << "u" << user << "\ti" << test << "\t1\t0\n";
    out << "u" << user << "\ti" << corrupt << "\t1\t1\n";
    for (int t = 2; t < 14; ++t) {
      int item = test;
      while (item == test || item == corrupt) {
        item = draw(0, 4) < 4 ? (user % 6) + 6 * draw(0, 9) : draw(0, 59);
      }
      out << "u" << user << "\ti" << item << "\t5\t" << t << "\n";
    }
    out << "u" << user << "\ti" << (corrupt_tests ? corrupt : test) << "\t5\t14\n";
  }
}

struct TuneRun {
  Json report;
  std::string output;
  std::string work_dir;
  std::string chosen_yaml;
};

TuneRun Tune(const testing::TempDir& dir, const std::string& name, bool corrupt_tests,
             std::vector<std::string> search = {"--grid", "model.temperature=0.05,0.3", "--grid",
                                                "tables.item.optimizer.kind=adagrad,sgd",
                                                "--budget", "3"}) {
  const std::string folder = dir.path() + "/" + name;
  std::filesystem::create_directories(folder);
  WriteRatings(folder + "/ratings.tsv", corrupt_tests);
  std::ofstream(folder + "/job.yaml") << kConfig;
  TuneRun run;
  run.work_dir = folder + "/trials";
  run.chosen_yaml = folder + "/job.tuned.yaml";
  const std::string log = folder + "/tune.log";
  std::vector<std::string> argv = {EMBER_BINARY, "tune", "--config", folder + "/job.yaml",
                                   "--parallel", "2", "--json", folder + "/tune.json",
                                   "--work-dir", run.work_dir};
  argv.insert(argv.end(), search.begin(), search.end());
  ChildProcess tune(argv, log);
  EXPECT_EQ(tune.WaitExit(seconds(300)), 0) << testing::ReadFile(log);
  run.output = testing::ReadFile(log);
  run.report = Json::parse(testing::ReadFile(folder + "/tune.json"), nullptr, false);
  return run;
}

TEST(TuneProcessTest, ChoosesOnValidationAloneAndReportsTheChosenTestFigures) {
  testing::TempDir dir;
  const TuneRun clean = Tune(dir, "clean", false);
  const TuneRun corrupted = Tune(dir, "corrupted", true);
  ASSERT_TRUE(clean.report.is_object()) << clean.output;
  ASSERT_TRUE(corrupted.report.is_object()) << corrupted.output;

  // The budget ran three of the four trials; the table shows all four.
  const Json& trials = clean.report["trials"];
  ASSERT_EQ(trials.size(), 4u) << clean.report;
  EXPECT_NE(trials[3]["error"].get<std::string>().find("the budget allows 3 trials"),
            std::string::npos);
  int best = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(trials[i].contains("validation")) << trials[i];
    const Json& v = trials[i]["validation"];
    const Json& b = trials[best]["validation"];
    if (v["hit_rate"] > b["hit_rate"] || (v["hit_rate"] == b["hit_rate"] && v["ndcg"] > b["ndcg"])) {
      best = i;
    }
    // A trial never evaluates the test split: its summary has validation figures only.
    const Json summary = Json::parse(
        testing::ReadFile(clean.work_dir + "/trial-" + std::to_string(i + 1) + ".json"), nullptr,
        false);
    ASSERT_TRUE(summary.is_object());
    EXPECT_FALSE(summary["eval"].contains("hit_rate")) << summary["eval"];
    EXPECT_TRUE(summary["eval"].contains("validation")) << summary["eval"];
  }
  EXPECT_EQ(clean.report["chosen"], best + 1) << clean.report;
  EXPECT_NE(clean.output.find("* "), std::string::npos) << clean.output;
  EXPECT_GT(clean.report["test"]["hit_rate"].get<double>(), 0.0);

  // Corrupting every test item changes the test figures but neither a trial nor the choice.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(trials[i]["validation"], corrupted.report["trials"][i]["validation"]) << i;
  }
  EXPECT_EQ(clean.report["chosen"], corrupted.report["chosen"]);
  EXPECT_NE(clean.report["test"]["ndcg"], corrupted.report["test"]["ndcg"]);
  std::printf("chosen trial %d; test HR@10 %.4f clean, %.4f with corrupted test items\n",
              clean.report["chosen"].get<int>(), clean.report["test"]["hit_rate"].get<double>(),
              corrupted.report["test"]["hit_rate"].get<double>());

  // The chosen config loads and holds the chosen values.
  auto chosen = local::LoadClusterConfig(clean.chosen_yaml);
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  const Json& settings = trials[best]["settings"];
  EXPECT_FLOAT_EQ(chosen->model.temperature, std::stof(settings["model.temperature"].get<std::string>()));
}

TEST(TuneProcessTest, TrialsOfSeveralSeedsAreJudgedByTheirMeans) {
  testing::TempDir dir;
  const TuneRun run = Tune(dir, "seeds", false,
                           {"--grid", "model.temperature=0.05,0.3", "--seeds", "2",
                            "--set", "model.seed=7"});
  ASSERT_TRUE(run.report.is_object()) << run.output;
  const Json& trials = run.report["trials"];
  ASSERT_EQ(trials.size(), 2u) << run.report;
  int best = 0;
  for (int i = 0; i < 2; ++i) {
    // Each seed trained apart (seeds 7 and 8), and the trial's figures are their means.
    const Json& seeds = trials[i]["seeds"];
    ASSERT_EQ(seeds.size(), 2u) << trials[i];
    EXPECT_EQ(seeds[0]["seed"], 7);
    EXPECT_EQ(seeds[1]["seed"], 8);
    for (const char* key : {"hit_rate", "ndcg"}) {
      EXPECT_NEAR(trials[i]["validation"][key].get<double>(),
                  (seeds[0][key].get<double>() + seeds[1][key].get<double>()) / 2, 1e-12)
          << key;
    }
    for (int seed : {7, 8}) {
      const std::string summary = run.work_dir + "/trial-" + std::to_string(i + 1) + "-seed-" +
                                  std::to_string(seed) + ".json";
      EXPECT_TRUE(std::filesystem::exists(summary)) << summary;
    }
    const Json& v = trials[i]["validation"];
    const Json& b = trials[best]["validation"];
    if (v["hit_rate"] > b["hit_rate"] || (v["hit_rate"] == b["hit_rate"] && v["ndcg"] > b["ndcg"])) {
      best = i;
    }
  }
  EXPECT_EQ(run.report["chosen"], best + 1) << run.report;
  // The test figures are the two seeds' means, with their spread.
  const Json& test = run.report["test"];
  ASSERT_EQ(test["seeds"].size(), 2u) << test;
  const double first = test["seeds"][0]["hit_rate"], second = test["seeds"][1]["hit_rate"];
  EXPECT_NEAR(test["hit_rate"].get<double>(), (first + second) / 2, 1e-12);
  EXPECT_NEAR(test["hit_rate_sd"].get<double>(), std::abs(first - second) / std::sqrt(2.0), 1e-12);
  EXPECT_NE(run.output.find("over 2 seeds"), std::string::npos) << run.output;
}

TEST(TuneProcessTest, RefusesSyntheticDataAndBadGrids) {
  testing::TempDir dir;
  const std::string log = dir.path() + "/tune.log";
  const std::string tt_bench = std::string(EMBER_SOURCE_DIR) + "/configs/tt-bench.yaml";
  ChildProcess synthetic({EMBER_BINARY, "tune", "--config", tt_bench, "--grid",
                          "model.temperature=0.1,0.2"},
                         log);
  EXPECT_EQ(synthetic.WaitExit(seconds(60)), 2);
  ChildProcess bad_grid({EMBER_BINARY, "tune", "--config", tt_bench, "--grid", "model.temperature"},
                        log);
  EXPECT_EQ(bad_grid.WaitExit(seconds(60)), 2);
  ChildProcess seed_grid({EMBER_BINARY, "tune", "--config", tt_bench, "--seeds", "3", "--grid",
                          "model.seed=1,2"},
                         log);
  EXPECT_EQ(seed_grid.WaitExit(seconds(60)), 2);
  const std::string text = testing::ReadFile(log);
  EXPECT_NE(text.find("validation split of interaction data"), std::string::npos) << text;
  EXPECT_NE(text.find("--grid 'model.temperature': expected KEY=VALUE"), std::string::npos) << text;
  EXPECT_NE(text.find("--seeds 3 varies model.seed itself"), std::string::npos) << text;
}

TEST(TuneProcessTest, AFailedTrialIsReportedWithItsRunsErrorAlsoWhenLogsAreJson) {
  testing::TempDir dir;
  const testing::ScopedVariable json_logs("EMBER_LOG_FORMAT", "json");  // the runs inherit it
  const TuneRun run = Tune(dir, "json", false,
                           {"--grid", "data.interactions.negatives=20,1000"});
  ASSERT_TRUE(run.report.is_object()) << run.output;
  const Json& trials = run.report["trials"];
  ASSERT_EQ(trials.size(), 2u) << run.report;
  EXPECT_TRUE(trials[0].contains("validation")) << trials[0];
  // 60 items: no user has 1000 it never rated. The run's own words, not only its exit code.
  const std::string error = trials[1].value("error", "");
  EXPECT_NE(error.find("ember train: INVALID_ARGUMENT:"), std::string::npos) << error;
  EXPECT_NE(error.find("leaving fewer than 1000 negatives"), std::string::npos) << error;
  EXPECT_EQ(run.report["chosen"], 1) << run.report;
}

}  // namespace
}  // namespace ember
