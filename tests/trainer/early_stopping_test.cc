// Early stopping's rules: the options, the evaluation schedule, the best evaluation and patience.
#include "trainer/early_stopping.h"

#include <gtest/gtest.h>

namespace ember::trainer {
namespace {

Result<EarlyStoppingOptions> Parse(const std::string& yaml) {
  return EarlyStoppingOptionsFromYaml(YAML::Load(yaml), "train.early_stopping");
}

TEST(EarlyStoppingTest, OptionsNameWhatIsWrong) {
  auto options = Parse("{every_epochs: 2, patience: 4, then: retrain}");
  ASSERT_TRUE(options.ok()) << options.status().ToString();
  EXPECT_EQ(options->every_epochs, 2u);
  EXPECT_EQ(options->patience, 4u);
  EXPECT_EQ(options->then, AfterEarlyStop::kRetrain);
  EXPECT_TRUE(options->reloads_rows());
  EXPECT_FALSE(Parse("{every_steps: 5, then: keep_last}")->reloads_rows());

  for (const auto& [yaml, message] : std::vector<std::pair<std::string, std::string>>{
           {"{patience: 2}", "exactly one of every_epochs and every_steps"},
           {"{every_epochs: 1, every_steps: 3}", "exactly one of every_epochs and every_steps"},
           {"{every_epochs: 1, patience: 0}", "train.early_stopping.patience: must be > 0"},
           {"{every_epochs: 1, then: best}", "train.early_stopping.then: 'best' is not one of"},
           {"{every_epochs: 1, pateince: 3}", "pateince"},
           {"[1, 2]", "must be a mapping"}}) {
    auto parsed = Parse(yaml);
    ASSERT_FALSE(parsed.ok()) << yaml;
    EXPECT_NE(parsed.status().ToString().find(message), std::string::npos)
        << yaml << ": " << parsed.status().ToString();
  }
}

TEST(EarlyStoppingTest, EvaluatesEveryNEpochsRoundedUpAndAtTheEnd) {
  EarlyStoppingOptions options;
  options.every_epochs = 2;
  // 10.5 steps an epoch, 6 epochs: 63 steps; evaluations after epochs 2, 4 and the last step.
  EXPECT_EQ(EvaluationSteps(options, 63, 10.5), (std::vector<uint32_t>{21, 42, 63}));
  options.every_epochs = 1;
  EXPECT_EQ(EvaluationSteps(options, 30, 10.0), (std::vector<uint32_t>{10, 20, 30}));
  // Epochs shorter than a step still evaluate once per step at most.
  EXPECT_EQ(EvaluationSteps(options, 3, 0.4), (std::vector<uint32_t>{1, 2, 3}));
  options = EarlyStoppingOptions{};
  options.every_steps = 7;
  EXPECT_EQ(EvaluationSteps(options, 20, 10.0), (std::vector<uint32_t>{7, 14, 20}));
  EXPECT_TRUE(EvaluationSteps(EarlyStoppingOptions{}, 20, 10.0).empty());
}

TEST(EarlyStoppingTest, HitRateFirstNdcgBreaksTiesEarlierWinsExactTies) {
  EarlyStopping tracker(2);
  EXPECT_FALSE(tracker.best().has_value());
  EXPECT_TRUE(tracker.Record({10, 1, 0.50, 0.30}));
  EXPECT_TRUE(tracker.Record({20, 2, 0.50, 0.31}));   // same HR, better NDCG
  EXPECT_FALSE(tracker.Record({30, 3, 0.50, 0.31}));  // an exact tie keeps the earlier
  EXPECT_FALSE(tracker.exhausted());
  EXPECT_FALSE(tracker.Record({40, 4, 0.49, 0.50}));  // NDCG does not outweigh HR
  EXPECT_TRUE(tracker.exhausted());
  EXPECT_EQ(tracker.best()->step, 20u);
  EXPECT_TRUE(tracker.Record({50, 5, 0.51, 0.10}));
  EXPECT_FALSE(tracker.exhausted());
  EXPECT_EQ(tracker.history().size(), 5u);
}

}  // namespace
}  // namespace ember::trainer
