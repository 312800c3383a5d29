// Tests for ZipfSampler: ranks in range, a heavy head, determinism and the key scrambling.
#include "trainer/zipf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

namespace ember::trainer {
namespace {

TEST(ZipfTest, RanksStayInRangeAtTheEdges) {
  for (double exponent : {0.0, 0.5, 1.0, 1.05, 2.0, 3.0}) {
    for (uint64_t vocabulary : {1ULL, 2ULL, 10ULL, 10'000'000ULL}) {
      const ZipfSampler zipf(vocabulary, exponent, false);
      EXPECT_EQ(zipf.Rank(0.0), 0u);
      EXPECT_LT(zipf.Rank(std::nextafter(1.0, 0.0)), vocabulary);
      uint64_t previous = 0;
      for (int i = 0; i < 1000; ++i) {
        const uint64_t rank = zipf.Rank(i / 1000.0);
        ASSERT_LT(rank, vocabulary);
        ASSERT_GE(rank, previous) << "not monotone in u";
        previous = rank;
      }
    }
  }
}

TEST(ZipfTest, HeadIsHeavyAndTailReached) {
  const ZipfSampler zipf(1'000'000, 1.05, false);
  std::mt19937_64 rng(3);
  const int draws = 200'000;
  int head = 0, first = 0, tail = 0;
  for (int i = 0; i < draws; ++i) {
    const uint64_t rank = zipf(rng);
    ASSERT_LT(rank, 1'000'000u);
    if (rank == 0) ++first;
    if (rank < 100) ++head;
    if (rank >= 100'000) ++tail;
  }
  // Continuous power law: P(rank < 100) = (1 - 101^-0.05) / (1 - 10^6^-0.05) ~ 0.41.
  EXPECT_NEAR(head / static_cast<double>(draws), 0.41, 0.02);
  EXPECT_GT(first, draws / 20);  // the hottest key alone is ~7% of draws
  EXPECT_GT(tail, draws / 20);   // and the long tail is still visited
}

TEST(ZipfTest, ExponentZeroIsUniform) {
  const ZipfSampler zipf(10, 0.0, false);
  std::vector<int> counts(10, 0);
  std::mt19937_64 rng(5);
  for (int i = 0; i < 100'000; ++i) ++counts[zipf(rng)];
  for (int count : counts) EXPECT_NEAR(count, 10'000, 500);
}

TEST(ZipfTest, ExponentOneMatchesTheLogUniformFormula) {
  const ZipfSampler zipf(1000, 1.0, false);
  // k = exp(u ln 1000) = 1000^0.5 = 31.6 -> rank 30.
  EXPECT_EQ(zipf.Rank(0.5), 30u);
}

TEST(ZipfTest, DeterministicForASeed) {
  const ZipfSampler zipf(1'000'000, 1.2, true, 99);
  std::mt19937_64 a(17), b(17), c(18);
  std::vector<uint64_t> from_a, from_b, from_c;
  for (int i = 0; i < 100; ++i) {
    from_a.push_back(zipf(a));
    from_b.push_back(zipf(b));
    from_c.push_back(zipf(c));
  }
  EXPECT_EQ(from_a, from_b);
  EXPECT_NE(from_a, from_c);
}

TEST(ZipfTest, ScrambleIsABijectionThatDependsOnTheSalt) {
  const ZipfSampler plain(1000, 1.05, false);
  const ZipfSampler salted(1000, 1.05, true, 1);
  const ZipfSampler other(1000, 1.05, true, 2);
  std::set<uint64_t> keys;
  for (uint64_t rank = 0; rank < 1000; ++rank) {
    EXPECT_EQ(plain.KeyOfRank(rank), rank);
    keys.insert(salted.KeyOfRank(rank));
    EXPECT_NE(salted.KeyOfRank(rank), other.KeyOfRank(rank));
  }
  EXPECT_EQ(keys.size(), 1000u);
  // Hot keys are spread: the first ranks do not share a residue modulo 8.
  std::set<uint64_t> residues;
  for (uint64_t rank = 0; rank < 16; ++rank) residues.insert(salted.KeyOfRank(rank) % 8);
  EXPECT_GT(residues.size(), 4u);
}

}  // namespace
}  // namespace ember::trainer
