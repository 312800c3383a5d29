// Tests for SyntheticSource: batch shape, determinism, and the planted user-item clusters.
#include "trainer/synthetic_source.h"

#include <gtest/gtest.h>

#include <numeric>
#include <unordered_map>
#include <unordered_set>

namespace ember::trainer {
namespace {

TEST(SyntheticSourceTest, FillsEverySlotWithTheBatchSize) {
  SyntheticOptions options;
  options.user_slots = 2;
  options.item_slots = 4;
  SyntheticSource source(options);
  EXPECT_EQ(source.user_slots(), 2u);
  EXPECT_EQ(source.item_slots(), 4u);
  Batch batch;
  ASSERT_TRUE(source.Next(128, &batch).ok());
  EXPECT_EQ(batch.size, 128u);
  ASSERT_EQ(batch.user_keys.size(), 2u);
  ASSERT_EQ(batch.item_keys.size(), 4u);
  for (const auto& slot : batch.user_keys) EXPECT_EQ(slot.size(), 128u);
  for (const auto& slot : batch.item_keys) EXPECT_EQ(slot.size(), 128u);
  ASSERT_TRUE(source.Next(16, &batch).ok());  // a smaller batch shrinks every slot
  for (const auto& slot : batch.item_keys) EXPECT_EQ(slot.size(), 16u);
}

TEST(SyntheticSourceTest, DescribeNamesTheDistribution) {
  SyntheticSource source(SyntheticOptions{});
  EXPECT_EQ(source.Describe().rfind("synthetic zipf(1.05) vocab 10000000 x 6 slots", 0), 0u)
      << source.Describe();
}

TEST(SyntheticSourceTest, DeterministicGivenTheSeed) {
  SyntheticOptions options;
  SyntheticSource a(options), b(options);
  options.seed = 8;
  SyntheticSource c(options);
  Batch batch_a, batch_b, batch_c;
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(a.Next(64, &batch_a).ok());
    ASSERT_TRUE(b.Next(64, &batch_b).ok());
    ASSERT_TRUE(c.Next(64, &batch_c).ok());
    EXPECT_EQ(batch_a.user_keys, batch_b.user_keys);
    EXPECT_EQ(batch_a.item_keys, batch_b.item_keys);
    EXPECT_NE(batch_a.user_keys, batch_c.user_keys);
  }
}

TEST(SyntheticSourceTest, KeysAreSkewedPerSlot) {
  SyntheticOptions options;
  options.vocabulary = 100'000;
  SyntheticSource source(options);
  Batch batch;
  ASSERT_TRUE(source.Next(20'000, &batch).ok());
  std::unordered_map<uint64_t, int> counts;
  for (uint64_t key : batch.item_keys[0]) ++counts[key];
  int hottest = 0;
  for (const auto& [key, count] : counts) hottest = std::max(hottest, count);
  EXPECT_GT(hottest, 100);           // a Zipf head...
  EXPECT_GT(counts.size(), 2000u);   // ...and a long tail
}

// Connected components of the graph joining each sample's user slot-0 and item slot-0 keys.
size_t CoOccurrenceComponents(const SyntheticOptions& options, uint32_t samples) {
  SyntheticSource source(options);
  Batch batch;
  EXPECT_TRUE(source.Next(samples, &batch).ok());
  std::unordered_map<uint64_t, size_t> node;
  std::vector<size_t> parent;
  auto id = [&](uint64_t key) {
    auto [it, inserted] = node.try_emplace(key, parent.size());
    if (inserted) parent.push_back(parent.size());
    return it->second;
  };
  auto find = [&](size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (uint32_t b = 0; b < samples; ++b) {
    // Item keys are salted differently from user keys, so the two never collide.
    const size_t u = find(id(batch.user_keys[0][b]));
    const size_t i = find(id(batch.item_keys[0][b]));
    parent[u] = i;
  }
  size_t roots = 0;
  for (size_t x = 0; x < parent.size(); ++x) roots += find(x) == x;
  return roots;
}

TEST(SyntheticSourceTest, FullSignalSplitsKeysIntoTheClusters) {
  SyntheticOptions options;
  options.vocabulary = 400;
  options.num_clusters = 8;
  options.signal = 1.0f;
  // Every user key meets only item keys of its own cluster: exactly 8 components.
  EXPECT_EQ(CoOccurrenceComponents(options, 50'000), 8u);
  options.signal = 0.0f;
  // Without signal everything connects.
  EXPECT_EQ(CoOccurrenceComponents(options, 50'000), 1u);
}

TEST(SyntheticSourceTest, ValidationNamesTheField) {
  SyntheticOptions options;
  options.signal = 1.5f;
  Status status = ValidateSyntheticOptions(options, "data.synthetic");
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("data.synthetic.signal"), std::string_view::npos);
  options = SyntheticOptions{};
  options.vocabulary = 10;
  options.num_clusters = 64;
  status = ValidateSyntheticOptions(options, "data.synthetic");
  EXPECT_NE(status.message().find("num_clusters"), std::string_view::npos);
}

TEST(SyntheticSourceTest, ASavedPositionResumesWithTheSameBatches) {
  SyntheticOptions options;
  options.vocabulary = 5000;
  SyntheticSource source(options);
  Batch batch, expected;
  for (int step = 0; step < 3; ++step) ASSERT_TRUE(source.Next(50, &batch).ok());
  auto position = source.SavePosition();
  ASSERT_TRUE(position.ok()) << position.status().ToString();

  SyntheticSource resumed(options);
  ASSERT_TRUE(resumed.RestorePosition(*position).ok());
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(source.Next(50, &expected).ok());
    ASSERT_TRUE(resumed.Next(50, &batch).ok());
    EXPECT_EQ(batch.user_keys, expected.user_keys) << step;
    EXPECT_EQ(batch.item_keys, expected.item_keys) << step;
  }

  SyntheticOptions fewer = options;
  fewer.item_slots = 2;
  SyntheticSource other(fewer);
  Status refused = other.RestorePosition(*position);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.ToString().find("slot counts differ"), std::string::npos) << refused.ToString();
  EXPECT_EQ(resumed.RestorePosition(position->substr(0, position->size() / 2)).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ember::trainer
