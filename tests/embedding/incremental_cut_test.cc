// Incremental checkpoint cuts of a table (embedding/change_tracker.h, EmbeddingTable::CutPartition,
// partition_file.h's delta files): a cut after a tracked one holds exactly the rows changed since
// and the keys deleted since, so the previous cut's rows with the delta folded in are the rows the
// partition holds, in memory and tiered; a cut that never completed leaves its changes to the next
// one; erasing a partition, or a cut that does not track, makes the next cut whole. The same
// tracker's move mark keeps every key changed since a partition began moving out.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "embedding/change_tracker.h"
#include "embedding/embedding_table.h"
#include "embedding/partition_file.h"
#include "embedding/rocks_store.h"
#include "tests/test_util.h"

namespace ember::embedding {
namespace {

constexpr uint32_t kPartitions = 4;

TEST(ChangeTrackerTest, CutsReturnTheKeysChangedSinceTheCutTheyFollow) {
  ChangeTracker tracker(1, [](uint32_t) { return uint64_t{1000}; });
  tracker.Note(0, 1);  // untracked: nothing kept
  EXPECT_FALSE(tracker.tracked(0));
  EXPECT_FALSE(tracker.Cut(0, 0, 5, true).has_value());  // the base: whole
  ASSERT_TRUE(tracker.tracked(0));
  tracker.Note(0, 2);
  tracker.Note(0, 1);
  tracker.Note(0, 2);
  EXPECT_EQ(tracker.Cut(0, 5, 6, true), (std::vector<uint64_t>{1, 2}));
  tracker.Note(0, 3);
  EXPECT_EQ(tracker.Cut(0, 6, 7, true), (std::vector<uint64_t>{3}));
  tracker.Note(0, 4);
  // Cut 7 never completed: the next cut follows 6 again and gets the changes of both.
  EXPECT_EQ(tracker.Cut(0, 6, 8, true), (std::vector<uint64_t>{3, 4}));
  EXPECT_EQ(tracker.Cut(0, 8, 9, true), (std::vector<uint64_t>{}));
  // A cut it has no changes since is whole.
  EXPECT_FALSE(tracker.Cut(0, 77, 10, true).has_value());
  EXPECT_EQ(tracker.Cut(0, 10, 11, false), (std::vector<uint64_t>{}));
  EXPECT_FALSE(tracker.tracked(0));  // not tracking from 11
  tracker.Reset(0, 12);
  tracker.Note(0, 9);
  tracker.Forget(0);
  EXPECT_FALSE(tracker.Cut(0, 12, 13, true).has_value());
}

TEST(ChangeTrackerTest, APartitionMostlyChangedIsCutWhole) {
  ChangeTracker tracker(1, [](uint32_t) { return uint64_t{1000}; });
  tracker.Reset(0, 1);
  for (uint64_t key = 0; key < 400; ++key) tracker.Note(0, key % 300);  // 300 distinct
  EXPECT_TRUE(tracker.tracked(0));
  EXPECT_LE(tracker.keys_held(0), 2 * 300u);
  // More than half of the 1000 rows changed: noticed at the next deduplication, at most twice the
  // keys later.
  for (uint64_t key = 0; key < 1000 && tracker.tracked(0); ++key) tracker.Note(0, key);
  EXPECT_FALSE(tracker.tracked(0));
  EXPECT_FALSE(tracker.Cut(0, 1, 2, true).has_value());
}

TEST(ChangeTrackerTest, AMoveGetsEveryKeyChangedSinceItBeganWhateverTheCutsDo) {
  ChangeTracker tracker(2, [](uint32_t) { return uint64_t{100}; });
  tracker.Note(0, 1);  // before the move
  tracker.BeginMove(0);
  EXPECT_EQ(tracker.MoveChanges(1), (std::vector<uint64_t>{}));  // not moving
  tracker.Note(0, 9);
  tracker.Note(0, 3);
  tracker.Note(1, 4);  // another partition
  // Cuts, and forgetting the cuts' changes, leave the move's alone.
  EXPECT_FALSE(tracker.Cut(0, 0, 5, true).has_value());
  tracker.Note(0, 9);
  tracker.Forget(0);
  // Even most of the partition changing (which makes a cut whole) keeps the move's keys.
  for (uint64_t key = 10; key < 90; ++key) tracker.Note(0, key);
  std::vector<uint64_t> expected = {3, 9};
  for (uint64_t key = 10; key < 90; ++key) expected.push_back(key);
  EXPECT_EQ(tracker.MoveChanges(0), expected);
  EXPECT_GE(tracker.keys_held(0), expected.size());
  // A copy begun again starts over; an ended move keeps nothing.
  tracker.BeginMove(0);
  tracker.Note(0, 2);
  EXPECT_EQ(tracker.MoveChanges(0), (std::vector<uint64_t>{2}));
  tracker.EndMove(0);
  tracker.Note(0, 7);
  EXPECT_EQ(tracker.MoveChanges(0), (std::vector<uint64_t>{}));
  EXPECT_EQ(tracker.keys_held(0), 0u);
}

TableSpec Spec(uint32_t ttl_seconds = 0) {
  TableSpec spec;
  spec.name = "item";
  spec.dim = 4;
  spec.seed = 3;
  spec.optimizer.kind = OptimizerKind::kAdam;
  spec.optimizer.learning_rate = 0.01f;
  spec.ttl_seconds = ttl_seconds;
  return spec;
}

using Rows = std::map<uint64_t, std::vector<float>>;

Rows RowsOf(const PartitionRows& rows) {
  Rows all;
  const size_t floats = size_t{rows.dim} + rows.state_floats;
  for (size_t i = 0; i < rows.keys.size(); ++i) {
    all[rows.keys[i]].assign(rows.values.begin() + i * floats,
                             rows.values.begin() + (i + 1) * floats);
  }
  return all;
}

Rows PartitionOf(const EmbeddingTable& table, uint32_t partition) {
  Rows all;
  EXPECT_TRUE(table
                  .ForEachRowInPartition(partition,
                                         [&](uint64_t key, std::span<const float> row,
                                             std::span<const float> state) {
                                           std::vector<float> values(row.begin(), row.end());
                                           values.insert(values.end(), state.begin(), state.end());
                                           all[key] = values;
                                         })
                  .ok());
  return all;
}

std::vector<uint64_t> KeysOfPartition(const EmbeddingTable& table, uint32_t partition,
                                      uint64_t from, size_t count) {
  std::vector<uint64_t> keys;
  for (uint64_t key = from; keys.size() < count; ++key) {
    if (table.PartitionOf(key) == partition) keys.push_back(key);
  }
  return keys;
}

void Push(EmbeddingTable& table, const std::vector<uint64_t>& keys) {
  std::vector<float> grads(keys.size() * table.dim(), 0.25f);
  ASSERT_TRUE(table.Push(keys, grads).ok());
}

// In memory, or tiered with room for a few rows only (most are read from disk by the cut).
class IncrementalCutTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { table_ = MakeTable(Spec()); }

  std::unique_ptr<EmbeddingTable> MakeTable(const TableSpec& spec) {
    if (!GetParam()) return std::make_unique<EmbeddingTable>(spec, kPartitions);
    const uint32_t floats = EmbeddingTable::PersistedFloatsPerRow(spec);
    auto opened = RocksStore::Open({dir_.path() + "/db-" + std::to_string(++stores_opened_)},
                                   {{spec.name, floats}});
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    store_ = std::move(*opened);
    auto created = EmbeddingTable::Create(spec, kPartitions, TierOptions{store_->Table(spec.name),
                                                                         &budget_});
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return std::move(*created);
  }

  // Writes cut `cut` after `previous` of partition 0; returns what it held (whole or a delta).
  PartitionCut Cut(uint64_t previous, uint64_t cut, bool track = true) {
    auto written = WritePartitionCut(*table_, 0, previous, cut, track, Whole(cut), Delta(cut));
    EXPECT_TRUE(written.ok()) << written.status().ToString();
    return written.ok() ? *written : PartitionCut{};
  }
  std::string Whole(uint64_t cut) const {
    return dir_.path() + "/whole-" + std::to_string(cut) + ".bin";
  }
  std::string Delta(uint64_t cut) const {
    return dir_.path() + "/delta-" + std::to_string(cut) + ".bin";
  }

  testing::TempDir dir_;
  MemoryBudget budget_{600};  // a handful of rows of dim 4 with Adam state
  std::unique_ptr<RocksStore> store_;
  std::unique_ptr<EmbeddingTable> table_;
  int stores_opened_ = 0;
};

TEST_P(IncrementalCutTest, TheDeltaFoldedIntoThePreviousCutIsThePartition) {
  const std::vector<uint64_t> keys = KeysOfPartition(*table_, 0, 0, 40);
  Push(*table_, keys);
  Push(*table_, KeysOfPartition(*table_, 1, 0, 10));  // another partition
  EXPECT_TRUE(Cut(0, 1).whole);
  // Some rows updated, some created by a pull, some untouched.
  Push(*table_, std::vector<uint64_t>(keys.begin(), keys.begin() + 5));
  const std::vector<uint64_t> created = KeysOfPartition(*table_, 0, 100000, 3);
  std::vector<float> pulled(created.size() * table_->dim());
  ASSERT_TRUE(table_->Pull(created, pulled).ok());
  const PartitionCut delta = Cut(1, 2);
  ASSERT_FALSE(delta.whole);
  EXPECT_TRUE(delta.deleted.empty());
  auto read = ReadDeltaFile(*table_, 0, Delta(2));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->rows.keys.size(), 8u);  // 5 updated, 3 created

  auto folded = FoldPartitionFiles(std::vector<std::string>{Whole(1), Delta(2)}, table_.get(), 0);
  ASSERT_TRUE(folded.ok()) << folded.status().ToString();
  EXPECT_EQ(RowsOf(*folded), PartitionOf(*table_, 0));

  // Nothing changed since: an empty delta.
  EXPECT_FALSE(Cut(2, 3).whole);
  auto empty = ReadDeltaFile(Delta(3));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->rows.keys.empty());
}

TEST_P(IncrementalCutTest, ErasedOrUntrackedPartitionsAreCutWhole) {
  Push(*table_, KeysOfPartition(*table_, 0, 0, 10));
  EXPECT_TRUE(Cut(0, 1).whole);
  ASSERT_TRUE(table_->Erase(0).ok());
  Push(*table_, KeysOfPartition(*table_, 0, 0, 2));
  EXPECT_TRUE(Cut(1, 2).whole);
  EXPECT_FALSE(Cut(2, 3, /*track=*/false).whole);  // tracked since 2; stops tracking
  EXPECT_TRUE(Cut(3, 4).whole);
  // Just restored from cut 9: tracked from it.
  table_->TrackChangesFrom(0, 9);
  EXPECT_FALSE(Cut(9, 10).whole);
  EXPECT_EQ(table_->tracked_change_keys(), 0u);
}

TEST_P(IncrementalCutTest, ExpiredRowsAreListedAsDeleted) {
  uint32_t now = 1000;
  table_ = nullptr;
  store_ = nullptr;
  table_ = MakeTable(Spec(/*ttl_seconds=*/60));
  table_->SetClockForTesting([&] { return now; });
  const std::vector<uint64_t> keys = KeysOfPartition(*table_, 0, 0, 12);
  Push(*table_, keys);
  EXPECT_TRUE(Cut(0, 1).whole);
  now += 30;
  Push(*table_, std::vector<uint64_t>(keys.begin(), keys.begin() + 4));
  now += 40;  // the other 8 expire
  auto expired = table_->ExpireRows();
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  EXPECT_EQ(*expired, 8u);
  const PartitionCut delta = Cut(1, 2);
  ASSERT_FALSE(delta.whole);
  EXPECT_EQ(delta.deleted, std::vector<uint64_t>(keys.begin() + 4, keys.end()));
  auto folded = FoldPartitionFiles(std::vector<std::string>{Whole(1), Delta(2)}, table_.get(), 0);
  ASSERT_TRUE(folded.ok()) << folded.status().ToString();
  EXPECT_EQ(RowsOf(*folded), PartitionOf(*table_, 0));
  EXPECT_EQ(folded->keys.size(), 4u);
}

INSTANTIATE_TEST_SUITE_P(InMemoryAndTiered, IncrementalCutTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Tiered" : "InMemory"; });

}  // namespace
}  // namespace ember::embedding
