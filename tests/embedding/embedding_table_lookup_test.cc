// EmbeddingTable::Lookup, the read-only pull of the serving path: it returns what a pull would and
// changes nothing (rows, optimizer state, admission counts, tier residency and counters).
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <vector>

#include "embedding/embedding_table.h"
#include "embedding/initializer.h"
#include "embedding/rocks_store.h"
#include "tests/test_util.h"

namespace ember::embedding {
namespace {

constexpr uint32_t kPartitions = 16;
constexpr uint32_t kDim = 4;

TableSpec Spec(OptimizerKind kind = OptimizerKind::kAdagrad, uint32_t admit_after = 0) {
  TableSpec spec;
  spec.name = "item";
  spec.dim = kDim;
  spec.seed = 11;
  spec.optimizer.kind = kind;
  spec.optimizer.learning_rate = 0.1f;
  spec.initializer.kind = InitializerKind::kNormal;
  spec.initializer.stddev = 0.5f;
  spec.admit_after = admit_after;
  return spec;
}

std::vector<uint64_t> Keys(uint64_t first, size_t n) {
  std::vector<uint64_t> keys(n);
  std::iota(keys.begin(), keys.end(), first);
  return keys;
}

// Every row with its optimizer state, by key.
std::map<uint64_t, std::vector<float>> Dump(const EmbeddingTable& table) {
  std::map<uint64_t, std::vector<float>> rows;
  Status visited =
      table.ForEachRow([&](uint64_t key, std::span<const float> row, std::span<const float> state) {
        std::vector<float> all(row.begin(), row.end());
        all.insert(all.end(), state.begin(), state.end());
        rows.emplace(key, std::move(all));
      });
  EXPECT_TRUE(visited.ok()) << visited.ToString();
  return rows;
}

void Train(EmbeddingTable& table, std::span<const uint64_t> keys, int steps) {
  std::vector<float> grads(keys.size() * kDim);
  for (int step = 0; step < steps; ++step) {
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = 0.01f * float((i * 7 + step) % 13) - 0.06f;
    ASSERT_TRUE(table.Push(keys, grads).ok());
  }
}

TEST(EmbeddingTableLookupTest, LookupOfUntouchedKeysCreatesNoRowsAndGivesTheInitialRows) {
  EmbeddingTable table(Spec(), kPartitions);
  const std::vector<uint64_t> keys = Keys(100, 300);
  std::vector<float> looked_up(keys.size() * kDim);
  ASSERT_TRUE(table.Lookup(keys, looked_up, MissingRows::kInitial, {}).ok());
  EXPECT_EQ(table.rows(), 0u);
  // A pull on another table creates exactly these rows.
  EmbeddingTable fresh(Spec(), kPartitions);
  std::vector<float> pulled(keys.size() * kDim);
  ASSERT_TRUE(fresh.Pull(keys, pulled).ok());
  EXPECT_EQ(looked_up, pulled);
}

TEST(EmbeddingTableLookupTest, FlagModeFlagsMissingKeysAndZeroFillsTheirRows) {
  EmbeddingTable table(Spec(), kPartitions);
  const std::vector<uint64_t> stored = Keys(1, 10);
  std::vector<float> pulled(stored.size() * kDim);
  ASSERT_TRUE(table.Pull(stored, pulled).ok());
  const std::vector<uint64_t> keys = {5, 1000, 1, 2000};
  std::vector<float> rows(keys.size() * kDim, -1.0f);
  std::vector<uint8_t> found(keys.size(), 7);
  ASSERT_TRUE(table.Lookup(keys, rows, MissingRows::kFlag, found).ok());
  EXPECT_EQ(found, (std::vector<uint8_t>{1, 0, 1, 0}));
  for (uint32_t d = 0; d < kDim; ++d) {
    EXPECT_EQ(rows[0 * kDim + d], pulled[4 * kDim + d]);
    EXPECT_EQ(rows[1 * kDim + d], 0.0f);
    EXPECT_EQ(rows[2 * kDim + d], pulled[0 * kDim + d]);
    EXPECT_EQ(rows[3 * kDim + d], 0.0f);
  }
  EXPECT_EQ(table.rows(), stored.size());
}

TEST(EmbeddingTableLookupTest, LookupOfTrainedRowsLeavesRowsAndOptimizerStateUnchanged) {
  EmbeddingTable looked_at(Spec(OptimizerKind::kAdam), kPartitions);
  EmbeddingTable untouched(Spec(OptimizerKind::kAdam), kPartitions);
  const std::vector<uint64_t> keys = Keys(40, 200);
  Train(looked_at, keys, 3);
  Train(untouched, keys, 3);
  const auto before = Dump(looked_at);
  std::vector<float> rows(keys.size() * kDim);
  std::vector<uint8_t> found(keys.size());
  ASSERT_TRUE(looked_at.Lookup(keys, rows, MissingRows::kFlag, found).ok());
  EXPECT_EQ(Dump(looked_at), before);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(found[i], 1);
    const auto& stored = before.at(keys[i]);
    for (uint32_t d = 0; d < kDim; ++d) EXPECT_EQ(rows[i * kDim + d], stored[d]);
  }
  // The next steps give the same rows as on the table nobody looked at.
  Train(looked_at, keys, 2);
  Train(untouched, keys, 2);
  EXPECT_EQ(Dump(looked_at), Dump(untouched));
}

TEST(EmbeddingTableLookupTest, LookupDoesNotCountTowardsAdmission) {
  EmbeddingTable table(Spec(OptimizerKind::kSgd, /*admit_after=*/2), kPartitions);
  const std::vector<uint64_t> keys = {9};
  std::vector<float> row(kDim);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(table.Lookup(keys, row, MissingRows::kInitial, {}).ok());
  EXPECT_EQ(table.keys_not_admitted(), 0u);
  ASSERT_TRUE(table.Pull(keys, row).ok());  // the first occurrence: served, not stored
  EXPECT_EQ(table.rows(), 0u);
  ASSERT_TRUE(table.Pull(keys, row).ok());  // the second: admitted
  EXPECT_EQ(table.rows(), 1u);
}

TEST(EmbeddingTableLookupTest, WrongSizesAreRefused) {
  EmbeddingTable table(Spec(), kPartitions);
  const std::vector<uint64_t> keys = {1, 2};
  std::vector<float> short_rows(kDim);
  EXPECT_EQ(table.Lookup(keys, short_rows, MissingRows::kInitial, {}).code(),
            StatusCode::kInvalidArgument);
  std::vector<float> rows(2 * kDim);
  std::vector<uint8_t> found(1);
  EXPECT_EQ(table.Lookup(keys, rows, MissingRows::kFlag, found).code(),
            StatusCode::kInvalidArgument);
}

TEST(EmbeddingTableLookupTest, LookupOfSpilledRowsKeepsResidencyAndEvictionsAsTheyWere) {
  testing::TempDir dir;
  const TableSpec spec = Spec();
  const uint32_t floats = EmbeddingTable::PersistedFloatsPerRow(spec);
  auto store = RocksStore::Open({dir.path()}, {{spec.name, floats}});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  // Room for about 100 of the 2000 rows.
  MemoryBudget budget(100 * (floats + 1) * sizeof(float));
  auto table =
      EmbeddingTable::Create(spec, kPartitions, TierOptions{(*store)->Table(spec.name), &budget});
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  const std::vector<uint64_t> keys = Keys(1, 2000);
  Train(**table, keys, 2);
  const TierStats tier_before = (*table)->tier_stats();
  ASSERT_GT(tier_before.evictions, 0u);
  ASSERT_LT(tier_before.resident_rows, keys.size());
  const auto before = Dump(**table);
  const uint64_t budget_used = budget.used();

  std::vector<uint64_t> asked = keys;
  asked.push_back(50'000);  // never stored
  std::vector<float> rows(asked.size() * kDim);
  std::vector<uint8_t> found(asked.size());
  ASSERT_TRUE((*table)->Lookup(asked, rows, MissingRows::kFlag, found).ok());

  const TierStats tier_after = (*table)->tier_stats();
  EXPECT_EQ(tier_after.resident_rows, tier_before.resident_rows);
  EXPECT_EQ(tier_after.evictions, tier_before.evictions);
  EXPECT_EQ(tier_after.loaded, tier_before.loaded);
  EXPECT_EQ(tier_after.hits, tier_before.hits);
  EXPECT_EQ(tier_after.misses, tier_before.misses);
  EXPECT_EQ(tier_after.writebacks, tier_before.writebacks);
  EXPECT_EQ(budget.used(), budget_used);
  EXPECT_EQ((*table)->rows(), keys.size());
  EXPECT_EQ(Dump(**table), before);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_EQ(found[i], 1) << "key " << keys[i];
    const auto& stored = before.at(keys[i]);
    for (uint32_t d = 0; d < kDim; ++d) ASSERT_EQ(rows[i * kDim + d], stored[d]) << keys[i];
  }
  EXPECT_EQ(found.back(), 0);
}

}  // namespace
}  // namespace ember::embedding
