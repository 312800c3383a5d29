// EmbeddingTable::RestoreRows, how a serving replica writes the rows it is streamed: the same
// table as Restore key by key (new and overwritten rows, a key given twice ends with its last
// row), changes noted for followers, and sizes or optimizer state that do not fit refused.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "embedding/embedding_table.h"

namespace ember::embedding {
namespace {

constexpr uint32_t kPartitions = 64;
constexpr uint32_t kDim = 5;

TableSpec Spec(OptimizerKind kind = OptimizerKind::kSgd) {
  TableSpec spec;
  spec.name = "item";
  spec.dim = kDim;
  spec.seed = 3;
  spec.optimizer.kind = kind;
  return spec;
}

std::map<uint64_t, std::vector<float>> Dump(const EmbeddingTable& table) {
  std::map<uint64_t, std::vector<float>> rows;
  Status visited =
      table.ForEachRow([&](uint64_t key, std::span<const float> row, std::span<const float>) {
        rows.emplace(key, std::vector<float>(row.begin(), row.end()));
      });
  EXPECT_TRUE(visited.ok()) << visited.ToString();
  return rows;
}

// Keys spread over every partition and stripe, some twice, with distinct rows.
void Batch(uint64_t round, std::vector<uint64_t>& keys, std::vector<float>& rows) {
  keys.clear();
  rows.clear();
  for (uint64_t i = 0; i < 3000; ++i) {
    keys.push_back((i * 2654435761u + round * 977) % 5000);
    for (uint32_t d = 0; d < kDim; ++d) rows.push_back(float(round * 100000 + i * kDim + d));
  }
}

TEST(RestoreRowsTest, WritesWhatRestoreKeyByKeyWrites) {
  EmbeddingTable batched(Spec(), kPartitions);
  EmbeddingTable one_by_one(Spec(), kPartitions);
  std::vector<uint64_t> keys;
  std::vector<float> rows;
  for (uint64_t round = 0; round < 3; ++round) {  // later rounds overwrite rows
    Batch(round, keys, rows);
    ASSERT_TRUE(batched.RestoreRows(keys, rows).ok());
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE(one_by_one.Restore(keys[i], {rows.data() + i * kDim, kDim}, {}).ok());
    }
    EXPECT_EQ(batched.rows(), one_by_one.rows());
    EXPECT_EQ(Dump(batched), Dump(one_by_one));
  }
  EXPECT_GT(batched.rows(), 2000u);
}

TEST(RestoreRowsTest, FollowersAreDueTheRestoredKeys) {
  EmbeddingTable table(Spec(), kPartitions);
  const uint32_t partition = table.PartitionOf(42);
  table.Follow(partition, 7);
  auto whole = table.TakeFollowedKeys(partition, 7);  // the first take: every row
  ASSERT_TRUE(whole.ok());
  std::vector<uint64_t> keys = {42};
  std::vector<float> rows(kDim, 1.5f);
  ASSERT_TRUE(table.RestoreRows(keys, rows).ok());
  auto taken = table.TakeFollowedKeys(partition, 7);
  ASSERT_TRUE(taken.ok() && taken->has_value());
  EXPECT_EQ(**taken, std::vector<uint64_t>{42});
}

TEST(RestoreRowsTest, RefusesRowsOfTheWrongSizeOrATableWithOptimizerState) {
  EmbeddingTable table(Spec(), kPartitions);
  std::vector<uint64_t> keys = {1, 2};
  std::vector<float> short_rows(2 * kDim - 1, 1.0f);
  Status refused = table.RestoreRows(keys, short_rows);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("table 'item'"), std::string::npos) << refused.ToString();
  EXPECT_EQ(table.rows(), 0u);

  EmbeddingTable adagrad(Spec(OptimizerKind::kAdagrad), kPartitions);
  std::vector<float> rows(2 * kDim, 1.0f);
  EXPECT_EQ(adagrad.RestoreRows(keys, rows).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(adagrad.rows(), 0u);
}

}  // namespace
}  // namespace ember::embedding
