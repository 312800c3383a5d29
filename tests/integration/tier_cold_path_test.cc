// Tests for the tier benchmark's cold-path floor (bench/tier_cold_path.h): it times reads and
// write-backs of the stored rows without changing a single stored value, and its floor adds the
// rows read and written per key at their measured cost to memory's; and of the same floor over a
// plain file (bench/tier_file_path.h).
#include "bench/tier_cold_path.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <numeric>
#include <vector>

#include "bench/tier_file_path.h"
#include "embedding/embedding_table.h"
#include "embedding/rocks_store.h"
#include "tests/test_util.h"

namespace ember::bench {
namespace {

constexpr uint64_t kRows = 3000;

// A store in a temporary directory with the rows' family of a table of dim 4, and an in-memory
// table of the same spec for the keys' partitions.
struct ColdPathStore {
  ColdPathStore() : spec(Spec()), floats(embedding::EmbeddingTable::PersistedFloatsPerRow(spec)) {
    auto opened = embedding::RocksStore::Open({dir.path() + "/rows"}, {{spec.name, floats}});
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    store = std::move(*opened);
    shape = std::make_unique<embedding::EmbeddingTable>(spec, 8);
  }
  static TableSpec Spec() {
    TableSpec spec;
    spec.name = "item";
    spec.dim = 4;
    return spec;
  }
  embedding::RocksTable& disk() { return *store->Table(spec.name); }

  testing::TempDir dir;
  const TableSpec spec;
  const uint32_t floats;
  std::unique_ptr<embedding::RocksStore> store;
  std::unique_ptr<embedding::EmbeddingTable> shape;
};

TEST(TierColdPathTest, TimesReadsAndWritesWithoutChangingStoredRows) {
  ColdPathStore cold;
  embedding::RocksTable& disk = cold.disk();
  const embedding::EmbeddingTable& shape = *cold.shape;
  const uint32_t floats = cold.floats;
  // Row k holds k, k + 1, ...: any row written back with another row's values would show.
  std::vector<uint32_t> partitions(kRows);
  std::vector<uint64_t> keys(kRows);
  embedding::RowWrites writes(disk);
  for (uint64_t key = 0; key < kRows; ++key) {
    std::vector<float> row(floats);
    std::iota(row.begin(), row.end(), static_cast<float>(key));
    keys[key] = key;
    partitions[key] = shape.PartitionOf(key);
    writes.Put(partitions[key], key, row);
  }
  ASSERT_TRUE(disk.Write(writes).ok());

  auto figures = MeasureColdPath(kRows, disk, shape, 0.05);
  ASSERT_TRUE(figures.ok()) << figures.status().ToString();
  EXPECT_GT(figures->read_us, 0);
  EXPECT_GT(figures->stripe_read_us, 0);
  EXPECT_GT(figures->write_us, 0);

  size_t found = 0;
  ASSERT_TRUE(disk.MultiGet(partitions, keys,
                            [&](size_t i, std::span<const float> row) {
                              ++found;
                              for (uint32_t f = 0; f < floats; ++f) {
                                ASSERT_EQ(row[f], static_cast<float>(keys[i] + f))
                                    << "key " << keys[i];
                              }
                            })
                  .ok());
  EXPECT_EQ(found, kRows);
}

TEST(TierColdPathTest, RefusesATableTooSmallForOneWriteBatch) {
  ColdPathStore cold;
  auto figures = MeasureColdPath(kColdWriteBatch - 1, cold.disk(), *cold.shape, 0.01);
  ASSERT_FALSE(figures.ok());
  EXPECT_NE(figures.status().ToString().find("256 rows"), std::string::npos);
}

TEST(TierColdPathTest, FloorAddsTheColdRowsOfAKeyToMemorysCost) {
  // 200 ns in memory, 0.1 rows read at 4 us (400 ns) and 0.05 written back at 5 us (250 ns).
  EXPECT_DOUBLE_EQ(ColdPathFloorNs(200, 0.1, 4.0, 0.05, 5.0), 850);
  EXPECT_DOUBLE_EQ(ColdPathFloorNs(200, 0, 4.0, 0, 5.0), 200);
}

// The plain file's floor: every call costs some CPU, and the file is gone afterwards.
TEST(TierFilePathTest, TimesReadsWritesAndCallsAndRemovesItsFile) {
  testing::TempDir dir;
  auto figures = MeasureFilePath(dir.path(), 5000, 132, 0.05);
  ASSERT_TRUE(figures.ok()) << figures.status().ToString();
  EXPECT_GT(figures->read_us, 0);
  EXPECT_GT(figures->write_us, 0);
  EXPECT_GT(figures->syscall_us, 0);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/ember-file-path-rows"));
}

TEST(TierFilePathTest, NamesTheFileItCannotCreate) {
  auto figures = MeasureFilePath("/nonexistent-ember-dir", 100, 16, 0.01);
  ASSERT_FALSE(figures.ok());
  EXPECT_NE(figures.status().ToString().find("/nonexistent-ember-dir/ember-file-path-rows"),
            std::string::npos)
      << figures.status().ToString();
}

}  // namespace
}  // namespace ember::bench
