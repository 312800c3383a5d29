// Early stopping end to end (`ember cluster` runs on a small interaction file): the evaluations
// during one run equal the validation figures of brute-force runs of each length, the chosen
// epoch is theirs, the restored state is the best one, and a retrain equals a plain run of the
// chosen length on the whole training split.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/integration/small_interactions.h"

namespace ember {
namespace {

using std::chrono::seconds;
using Json = nlohmann::json;

using EarlyStoppingTest = testing::SmallInteractionsTest;

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
