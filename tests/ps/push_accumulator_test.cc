// PushAccumulator: deferred pushes combined per clock, non-listed trainers dropped, idempotence.
#include "ps/server/push_accumulator.h"

#include <gtest/gtest.h>

#include <map>

namespace ember::ps {
namespace {

// Collects what an apply hands to the tables: key -> gradient row (dim 2), and the learning
// rate of each table.
struct Applied {
  std::map<uint64_t, std::vector<float>> rows;
  std::map<std::string, float> learning_rates;
  int calls = 0;
  PushAccumulator::ApplyFn Fn() {
    return [this](const std::string& table, std::span<const uint64_t> keys,
                  std::span<const float> gradients, float learning_rate) {
      ++calls;
      learning_rates[table] = learning_rate;
      for (size_t i = 0; i < keys.size(); ++i) {
        rows[keys[i]] = {gradients[2 * i], gradients[2 * i + 1]};
      }
      return Status::Ok();
    };
  }
};

TEST(PushAccumulatorTest, MeanDividesTheSumPerKeyByTheNumberOfTrainers) {
  PushAccumulator accumulator;
  std::vector<uint64_t> a_keys = {1, 2}, b_keys = {2};
  std::vector<float> a = {1, 1, 2, 2}, b = {4, 6};
  ASSERT_TRUE(accumulator.Add(1, 0, "t", a_keys, a).ok());
  ASSERT_TRUE(accumulator.Add(1, 1, "t", b_keys, b).ok());
  Applied applied;
  std::vector<uint32_t> trainers = {0, 1};
  ASSERT_TRUE(accumulator.Apply(1, trainers, Combine::kMean, applied.Fn()).ok());
  EXPECT_EQ(applied.rows[1], (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(applied.rows[2], (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(accumulator.pending_pushes(), 0u);
}

TEST(PushAccumulatorTest, AClocksPushesToATableShareOneLearningRate) {
  PushAccumulator accumulator;
  std::vector<uint64_t> keys = {1};
  std::vector<float> gradient = {1, 1};
  ASSERT_TRUE(accumulator.Add(1, 0, "t", keys, gradient, 0.25f).ok());
  ASSERT_TRUE(accumulator.Add(1, 1, "t", keys, gradient, 0.25f).ok());
  ASSERT_TRUE(accumulator.Add(1, 1, "u", keys, gradient).ok());  // another table: its own
  const Status other = accumulator.Add(1, 2, "t", keys, gradient, 0.5f);
  EXPECT_EQ(other.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.message().find("learning rate 0.5"), std::string::npos) << other.ToString();
  Applied applied;
  std::vector<uint32_t> trainers = {0, 1, 2};
  ASSERT_TRUE(accumulator.Apply(1, trainers, Combine::kSum, applied.Fn()).ok());
  EXPECT_EQ(applied.learning_rates["t"], 0.25f);
  EXPECT_EQ(applied.learning_rates["u"], 0.0f);
  EXPECT_EQ(applied.rows[1], (std::vector<float>{1.0f, 1.0f}));  // "u" applied after "t"
}

TEST(PushAccumulatorTest, PushesOfUnlistedTrainersAreDroppedAndApplyIsIdempotent) {
  PushAccumulator accumulator;
  std::vector<uint64_t> keys = {7};
  std::vector<float> a = {1, 1}, dead = {100, 100};
  ASSERT_TRUE(accumulator.Add(3, 0, "t", keys, a).ok());
  ASSERT_TRUE(accumulator.Add(3, 2, "t", keys, dead).ok());
  Applied applied;
  std::vector<uint32_t> trainers = {0};
  ASSERT_TRUE(accumulator.Apply(3, trainers, Combine::kSum, applied.Fn()).ok());
  ASSERT_TRUE(accumulator.Apply(3, trainers, Combine::kSum, applied.Fn()).ok());
  EXPECT_EQ(applied.calls, 1);
  EXPECT_EQ(applied.rows[7], (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(accumulator.Add(3, 0, "t", keys, a).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(accumulator.applied_clock(), 3u);
}

TEST(PushAccumulatorTest, APushAheadOfTheNextClockIsRefusedOnceAClockWasApplied) {
  PushAccumulator accumulator(/*max_pushes=*/4);
  std::vector<uint64_t> keys = {7};
  std::vector<float> gradient = {1, 1};
  std::vector<uint32_t> trainers = {0};
  Applied applied;
  ASSERT_TRUE(accumulator.Add(5, 0, "t", keys, gradient).ok());
  ASSERT_TRUE(accumulator.Apply(5, trainers, Combine::kSum, applied.Fn()).ok());
  for (uint64_t ahead : {uint64_t{7}, uint64_t{1} << 31, uint64_t{1} << 63, UINT64_MAX}) {
    const Status refused = accumulator.Add(ahead, 1, "t", keys, gradient);
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << ahead;
    EXPECT_NE(refused.message().find("takes clock 6 only"), std::string::npos)
        << refused.message();
  }
  EXPECT_EQ(accumulator.pending_pushes(), 0u);
  // The room those would have taken is there for the honest pushes of the next clock.
  for (uint32_t trainer = 0; trainer < 4; ++trainer) {
    EXPECT_TRUE(accumulator.Add(6, trainer, "t", keys, gradient).ok()) << trainer;
  }
}

TEST(PushAccumulatorTest, PushesHeldForFarClocksBeforeAnyApplyAreDroppedByTheFirstApply) {
  PushAccumulator accumulator(/*max_pushes=*/8);
  std::vector<uint64_t> keys = {7};
  std::vector<float> gradient = {1, 1};
  ASSERT_TRUE(accumulator.Add(UINT64_MAX, 9, "t", keys, gradient).ok());
  ASSERT_TRUE(accumulator.Add(uint64_t{1} << 40, 9, "t", keys, gradient).ok());
  ASSERT_TRUE(accumulator.Add(12, 0, "t", keys, gradient).ok());
  ASSERT_TRUE(accumulator.Add(13, 0, "t", keys, gradient).ok());
  Applied applied;
  std::vector<uint32_t> trainers = {0};
  ASSERT_TRUE(accumulator.Apply(12, trainers, Combine::kSum, applied.Fn()).ok());
  EXPECT_EQ(accumulator.pending_pushes(), 1u);  // clock 13's only
  ASSERT_TRUE(accumulator.Apply(13, trainers, Combine::kSum, applied.Fn()).ok());
  EXPECT_EQ(applied.calls, 2);
  EXPECT_EQ(accumulator.pending_pushes(), 0u);
}

}  // namespace
}  // namespace ember::ps
