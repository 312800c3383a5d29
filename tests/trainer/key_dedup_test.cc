// Tests for key deduplication: first-occurrence order, inverse indices, reuse across calls.
#include "trainer/key_dedup.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace ember::trainer {
namespace {

TEST(KeyDedupTest, KeepsFirstOccurrenceOrderAndInverse) {
  const std::vector<uint64_t> keys = {7, 3, 7, 9, 3, 3, 0};
  UniqueKeys unique;
  Dedupe(keys, &unique);
  EXPECT_EQ(unique.keys, (std::vector<uint64_t>{7, 3, 9, 0}));
  EXPECT_EQ(unique.inverse, (std::vector<uint32_t>{0, 1, 0, 2, 1, 1, 3}));
}

TEST(KeyDedupTest, EmptyAndAllEqual) {
  UniqueKeys unique;
  Dedupe(std::vector<uint64_t>{}, &unique);
  EXPECT_TRUE(unique.keys.empty());
  EXPECT_TRUE(unique.inverse.empty());
  Dedupe(std::vector<uint64_t>(100, ~uint64_t{0}), &unique);
  EXPECT_EQ(unique.keys, (std::vector<uint64_t>{~uint64_t{0}}));
  EXPECT_EQ(unique.inverse, std::vector<uint32_t>(100, 0));
}

TEST(KeyDedupTest, CallsDoNotSeeEachOthersKeys) {
  UniqueKeys first, second;
  Dedupe(std::vector<uint64_t>{1, 2, 3}, &first);
  Dedupe(std::vector<uint64_t>{3, 2}, &second);
  EXPECT_EQ(second.keys, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(second.inverse, (std::vector<uint32_t>{0, 1}));
}

TEST(KeyDedupTest, MatchesAReferenceOnRandomBatchesOfChangingSize) {
  std::mt19937_64 rng(11);
  UniqueKeys unique;  // reused: capacity carries over
  for (int round = 0; round < 50; ++round) {
    const size_t size = 1 + rng() % 5000;
    const uint64_t range = 1 + rng() % 3000;
    std::vector<uint64_t> keys(size);
    for (uint64_t& key : keys) key = (rng() % range) * 0x10000000000ULL;  // same low bits
    Dedupe(keys, &unique);

    std::unordered_map<uint64_t, uint32_t> reference;
    std::vector<uint64_t> expected;
    for (uint64_t key : keys) {
      if (reference.emplace(key, static_cast<uint32_t>(expected.size())).second) {
        expected.push_back(key);
      }
    }
    ASSERT_EQ(unique.keys, expected) << "round " << round;
    ASSERT_EQ(unique.inverse.size(), keys.size());
    for (size_t b = 0; b < keys.size(); ++b) {
      ASSERT_EQ(unique.inverse[b], reference[keys[b]]);
      ASSERT_EQ(unique.keys[unique.inverse[b]], keys[b]);
    }
  }
}

}  // namespace
}  // namespace ember::trainer
