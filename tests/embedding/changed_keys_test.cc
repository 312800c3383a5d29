// ChangedKeys: every key noted comes back once, in order, however often it was noted, and the
// notes held stay within about two per key.
#include "embedding/changed_keys.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

namespace ember::embedding {
namespace {

TEST(ChangedKeysTest, ReturnsEachNotedKeyOnceInAscendingOrder) {
  ChangedKeys keys;
  EXPECT_TRUE(keys.empty());
  for (uint64_t key : {9, 3, 9, 7, 3, 3}) keys.Add(key);
  EXPECT_EQ(keys.Sorted(), std::vector<uint64_t>({3, 7, 9}));
  EXPECT_EQ(keys.size(), 6u);  // not deduplicated yet
}

TEST(ChangedKeysTest, TakeSortedEmptiesTheNotesAndStartsCompactingAfresh) {
  ChangedKeys keys;
  for (uint64_t key = 0; key < 3 * ChangedKeys::kFirstCompaction; ++key) keys.Add(key % 300);
  EXPECT_EQ(keys.TakeSorted().size(), 300u);
  EXPECT_TRUE(keys.empty());
  for (uint64_t key : {4, 2, 4}) keys.Add(key);
  EXPECT_EQ(keys.size(), 3u);  // below the first compaction again
  EXPECT_EQ(keys.TakeSorted(), std::vector<uint64_t>({2, 4}));
  EXPECT_TRUE(keys.TakeSorted().empty());
}

TEST(ChangedKeysTest, NotesOfFewKeysStayWithinTwicePerKey) {
  ChangedKeys keys;
  std::mt19937_64 rng(5);
  std::set<uint64_t> distinct;
  size_t compactions = 0;
  for (int i = 0; i < 200000; ++i) {
    const uint64_t key = rng() % 1000;
    distinct.insert(key);
    compactions += keys.Add(key) ? 1 : 0;
    ASSERT_LE(keys.size(), std::max<size_t>(ChangedKeys::kFirstCompaction, 2 * distinct.size()));
  }
  EXPECT_GT(compactions, 100u);
  const std::vector<uint64_t> sorted = keys.Sorted();
  EXPECT_EQ(sorted, std::vector<uint64_t>(distinct.begin(), distinct.end()));
  std::vector<uint64_t> appended;
  keys.AppendTo(appended);
  ChangedKeys::SortUnique(appended);
  EXPECT_EQ(appended, sorted);
}

}  // namespace
}  // namespace ember::embedding
