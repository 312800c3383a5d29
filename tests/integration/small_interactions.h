// A small interaction file (150 users in 6 taste groups, 60 items) and a fixture that trains on
// it with `ember cluster` and reads the trainer's JSON summary: for end-to-end tests of what the
// trainer does with interaction data (early stopping, losses). A run takes about a second.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/child_process.h"
#include "tests/test_util.h"

namespace ember::testing {

constexpr const char* kSmallInteractionsConfig = R"(
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
inline void WriteSmallInteractions(const std::string& path) {
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

class SmallInteractionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteSmallInteractions(dir_.path() + "/interactions.tsv");
    std::ofstream(config_) << kSmallInteractionsConfig;
  }

  // Runs `ember cluster` with the overrides; the trainer's JSON summary.
  nlohmann::json Run(const std::vector<std::string>& overrides) {
    const std::string summary = dir_.path() + "/summary-" + std::to_string(++runs_) + ".json";
    std::vector<std::string> argv = {EMBER_BINARY, "cluster", "--config", config_,
                                     "--summary-json", summary};
    for (const std::string& o : overrides) argv.insert(argv.end(), {"--set", o});
    const std::string log = dir_.path() + "/run-" + std::to_string(runs_) + ".log";
    ChildProcess cluster(argv, log);
    EXPECT_EQ(cluster.WaitExit(std::chrono::seconds(300)), 0) << ReadFile(log);
    nlohmann::json json = nlohmann::json::parse(ReadFile(summary), nullptr, false);
    EXPECT_TRUE(json.is_object()) << ReadFile(log);
    return json.is_object() ? json : nlohmann::json::object();
  }

  TempDir dir_;
  const std::string config_ = dir_.path() + "/job.yaml";
  int runs_ = 0;
};

}  // namespace ember::testing
