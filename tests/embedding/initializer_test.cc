// Tests for InitializeRow: determinism, independence from layout and order, and distributions.
#include "embedding/initializer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "common/hash.h"
#include "embedding/embedding_table.h"

namespace ember::embedding {
namespace {

TableSpec MakeSpec(uint64_t seed, InitializerKind kind = InitializerKind::kNormal) {
  TableSpec spec;
  spec.name = "items";
  spec.dim = 8;
  spec.seed = seed;
  spec.initializer.kind = kind;
  spec.initializer.stddev = 0.5f;
  spec.initializer.low = -2.0f;
  spec.initializer.high = 3.0f;
  return spec;
}

std::vector<float> Row(const TableSpec& spec, uint64_t key) {
  std::vector<float> row(spec.dim);
  InitializeRow(spec, key, row);
  return row;
}

std::vector<float> PullAll(EmbeddingTable& table, const std::vector<uint64_t>& keys) {
  std::vector<float> out(keys.size() * table.dim());
  EXPECT_TRUE(table.Pull(keys, out).ok());
  return out;
}

TEST(InitializerTest, SameKeyGivesSameRowWhateverThePartitionCountOrOrder) {
  const TableSpec spec = MakeSpec(11);
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 200; ++k) keys.push_back(Mix64(k));
  keys.push_back(0);
  keys.push_back(UINT64_MAX);
  std::vector<uint64_t> reversed(keys.rbegin(), keys.rend());

  EmbeddingTable one_partition(spec, 1);
  EmbeddingTable many_partitions(spec, 97);
  const std::vector<float> forward = PullAll(one_partition, keys);
  PullAll(many_partitions, reversed);  // create the rows in the opposite order
  EXPECT_EQ(PullAll(many_partitions, keys), forward);
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::vector<float> expected = Row(spec, keys[i]);
    ASSERT_TRUE(std::equal(expected.begin(), expected.end(), forward.begin() + i * spec.dim));
  }
}

TEST(InitializerTest, ValueDoesNotDependOnRowLength) {
  const TableSpec spec = MakeSpec(5);
  std::vector<float> short_row(5), long_row(16);
  InitializeRow(spec, 42, short_row);
  InitializeRow(spec, 42, long_row);
  EXPECT_TRUE(std::equal(short_row.begin(), short_row.end(), long_row.begin()));
}

TEST(InitializerTest, SeedsAndKeysGiveDifferentRows) {
  EXPECT_NE(Row(MakeSpec(1), 7), Row(MakeSpec(2), 7));
  EXPECT_NE(Row(MakeSpec(1), 7), Row(MakeSpec(1), 8));
  EXPECT_EQ(Row(MakeSpec(1), 7), Row(MakeSpec(1), 7));
}

TEST(InitializerTest, MatchesTheDocumentedStream) {
  // Recomputes values from the formulas in initializer.h, which must never change.
  const TableSpec spec = MakeSpec(99);
  const uint64_t key = 123456789;
  const uint64_t base = HashCombine(spec.seed, key);
  auto uniform = [&](uint64_t i) {
    return static_cast<double>(Mix64(base + i * 0x9e3779b97f4a7c15ULL) >> 11) / 9007199254740992.0;
  };
  // Normal: the polar method over the stream's points, skipping those outside the unit disc.
  std::vector<double> expected;
  for (uint64_t element = 0; expected.size() < spec.dim; ++element) {
    const uint64_t bits = Mix64(base + element * 0x9e3779b97f4a7c15ULL);
    const double v1 = static_cast<double>(bits >> 40) / 8388608.0 - 1.0;
    const double v2 = static_cast<double>((bits >> 16) & 0xffffff) / 8388608.0 - 1.0;
    const double s = v1 * v1 + v2 * v2;
    if (s >= 1.0 || s == 0.0) continue;
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    expected.push_back(v1 * f);
    expected.push_back(v2 * f);
  }
  const std::vector<float> row = Row(spec, key);
  for (uint32_t i = 0; i < spec.dim; ++i) {
    EXPECT_NEAR(row[i], 0.5 * expected[i], 1e-5 * (1.0 + std::abs(expected[i]))) << i;
  }

  const TableSpec uniform_spec = MakeSpec(99, InitializerKind::kUniform);
  const std::vector<float> uniform_row = Row(uniform_spec, key);
  for (uint64_t i = 0; i < uniform_spec.dim; ++i) {
    EXPECT_NEAR(uniform_row[i], -2.0 + 5.0 * uniform(i), 1e-6);
  }
}

TEST(InitializerTest, NormalHasTheRequestedMeanAndStddev) {
  TableSpec spec = MakeSpec(3);
  spec.initializer.mean = 1.0f;
  spec.initializer.stddev = 0.25f;
  spec.dim = 10;
  double sum = 0, sum_sq = 0;
  const int kKeys = 1000;  // 10,000 values
  for (int key = 0; key < kKeys; ++key) {
    for (float x : Row(spec, key)) {
      sum += x;
      sum_sq += x * x;
    }
  }
  const double n = kKeys * spec.dim;
  const double mean = sum / n;
  const double stddev = std::sqrt(sum_sq / n - mean * mean);
  // The standard errors are 0.0025 (mean) and about 0.0018 (stddev); these bounds are ~5x wider.
  EXPECT_NEAR(mean, 1.0, 0.0125);
  EXPECT_NEAR(stddev, 0.25, 0.01);
}

TEST(InitializerTest, UniformStaysInRangeAndCoversIt) {
  const TableSpec spec = MakeSpec(4, InitializerKind::kUniform);
  float lowest = 100, highest = -100;
  double sum = 0;
  for (int key = 0; key < 1000; ++key) {
    for (float x : Row(spec, key)) {
      ASSERT_GE(x, -2.0f);
      ASSERT_LE(x, 3.0f);
      lowest = std::min(lowest, x);
      highest = std::max(highest, x);
      sum += x;
    }
  }
  EXPECT_LT(lowest, -1.9f);
  EXPECT_GT(highest, 2.9f);
  EXPECT_NEAR(sum / 8000, 0.5, 0.1);
}

TEST(InitializerTest, ZerosIsZero) {
  const TableSpec spec = MakeSpec(4, InitializerKind::kZeros);
  EXPECT_EQ(Row(spec, 77), std::vector<float>(spec.dim, 0.0f));
}

}  // namespace
}  // namespace ember::embedding
