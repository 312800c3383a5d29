// The tune grid's pieces: axes, combinations, budgets, reading a trial's validation figures
// (never its test figures) and the choice.
#include "local/tune_grid.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ember::local {
namespace {

TEST(TuneGridTest, AxesSplitAtCommasOutsideBrackets) {
  auto axis = ParseGridAxis("model.hidden=[64],[128, 64], [32]");
  ASSERT_TRUE(axis.ok()) << axis.status().ToString();
  EXPECT_EQ(axis->path, "model.hidden");
  EXPECT_EQ(axis->values, (std::vector<std::string>{"[64]", "[128, 64]", "[32]"}));
  for (const std::string bad : {"model.temperature", "=0.1", "model.temperature=0.1,,0.2",
                                 "model..temperature=1"}) {
    auto parsed = ParseGridAxis(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().ToString().find("--grid '" + bad + "'"), std::string::npos)
        << parsed.status().ToString();
  }
}

TEST(TuneGridTest, EveryCombinationFirstAxisSlowest) {
  const std::vector<GridAxis> axes = {{"a", {"1", "2"}}, {"b", {"x", "y", "z"}}};
  const auto trials = GridTrials(axes);
  ASSERT_EQ(trials.size(), 6u);
  EXPECT_EQ(trials[0][0].ToString() + " " + trials[0][1].ToString(), "a=1 b=x");
  EXPECT_EQ(trials[2][0].ToString() + " " + trials[2][1].ToString(), "a=1 b=z");
  EXPECT_EQ(trials[3][0].ToString() + " " + trials[3][1].ToString(), "a=2 b=x");
  EXPECT_EQ(GridTrials({}).size(), 1u);  // the config as it is
}

TEST(TuneGridTest, BudgetsOfTrialsTimeOrBoth) {
  EXPECT_EQ(ParseTuneBudget("12")->trials, 12u);
  EXPECT_EQ(ParseTuneBudget("90s")->time.count(), 90);
  EXPECT_EQ(ParseTuneBudget("30m")->time.count(), 1800);
  auto both = ParseTuneBudget("5,2h");
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->trials, 5u);
  EXPECT_EQ(both->time.count(), 7200);
  for (const char* bad : {"", "0", "5x", "m", "1,", "-3", "99999999999"}) {
    EXPECT_FALSE(ParseTuneBudget(bad).ok()) << bad;
  }
}

TEST(TuneGridTest, ReadsValidationAndNeverTheTestFigures) {
  auto plain = ValidationOfSummary(
      R"({"steps": 40, "eval": {"hit_rate": 0.9, "ndcg": 0.8,
          "validation": {"users": 10, "hit_rate": 0.5, "ndcg": 0.25}}})",
      4);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->hit_rate, 0.5);
  EXPECT_EQ(plain->ndcg, 0.25);
  EXPECT_EQ(plain->epoch, 4);
  EXPECT_EQ(plain->step, 40u);
  auto stopped = ValidationOfSummary(
      R"({"eval": {"validation": {"hit_rate": 0.1, "ndcg": 0.1}},
          "early_stopping": {"best": {"step": 7, "epoch": 2.5, "hit_rate": 0.6, "ndcg": 0.3}}})",
      10);
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->hit_rate, 0.6);
  EXPECT_EQ(stopped->epoch, 2.5);
  // Test figures alone are not enough.
  EXPECT_FALSE(ValidationOfSummary(R"({"eval": {"hit_rate": 0.9, "ndcg": 0.8}})", 1).ok());
  EXPECT_FALSE(ValidationOfSummary("not json", 1).ok());
}

TEST(TuneGridTest, ChoosesOnValidationSkippingFailedTrials) {
  std::vector<TrialOutcome> trials(4);
  trials[0].validation = trainer::ValidationPoint{10, 1, 0.5, 0.30};
  trials[1].validation = trainer::ValidationPoint{10, 1, 0.6, 0.20};
  trials[2].status = Unavailable("crashed");
  trials[3].validation = trainer::ValidationPoint{10, 1, 0.6, 0.20};  // a tie: the earlier wins
  EXPECT_EQ(ChooseTrial(trials), 1u);
  trials[1].status = Unavailable("crashed");
  EXPECT_EQ(ChooseTrial(trials), 3u);
  EXPECT_FALSE(ChooseTrial(std::vector<TrialOutcome>(2, TrialOutcome{{}, Unavailable("x")}))
                   .has_value());
}

}  // namespace
}  // namespace ember::local
