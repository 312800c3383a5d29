// Tests for ColdRowFile: rows stored are found as stored, a partition forgotten is found no more,
// a full bucket keeps the rows stored last but never replaces a changed one, batches find and
// store as single calls do, and the file leaves nothing on disk.
#include "embedding/cold_row_file.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "tests/test_util.h"

namespace ember::embedding {
namespace {

constexpr uint32_t kFloats = 9;
constexpr uint32_t kPartitions = 8;

std::vector<float> RowOf(uint64_t key, float version = 0) {
  std::vector<float> row(kFloats);
  for (uint32_t i = 0; i < kFloats; ++i) row[i] = static_cast<float>(key) * 10 + i + version;
  return row;
}

std::unique_ptr<ColdRowFile> MakeFile(const std::string& dir, uint64_t bytes) {
  auto created = ColdRowFile::Create(dir, kFloats, kPartitions, bytes);
  EXPECT_TRUE(created.ok()) << created.status().ToString();
  return created.ok() ? std::move(*created) : nullptr;
}

TEST(ColdRowFileTest, FindsWhatWasStoredLastAndNothingElse) {
  testing::TempDir dir;
  auto file = MakeFile(dir.path(), 1 << 20);
  ASSERT_NE(file, nullptr);
  for (uint64_t key = 0; key < 500; ++key) file->Store(key % kPartitions, key, RowOf(key), false);
  file->Store(3 % kPartitions, 3, RowOf(3, 0.5f), false);  // overwritten in place
  std::vector<float> out(kFloats);
  bool changed = false;
  for (uint64_t key = 0; key < 500; ++key) {
    ASSERT_TRUE(file->Find(key % kPartitions, key, out.data(), &changed)) << "key " << key;
    EXPECT_EQ(out, RowOf(key, key == 3 ? 0.5f : 0.0f)) << "key " << key;
  }
  EXPECT_FALSE(file->Find(0, 500, out.data(), &changed));           // never stored
  EXPECT_FALSE(file->Find(1, 8, out.data(), &changed));             // stored under partition 0
  EXPECT_FALSE(file->Find(kPartitions, 8, out.data(), &changed));   // no such partition
  file->Store(kPartitions, 8, RowOf(8, 1), false);                  // ignored
  file->Store(0, 8, std::vector<float>(kFloats - 1, 1.0f), false);  // the wrong width: ignored
  ASSERT_TRUE(file->Find(0, 8, out.data(), &changed));
  EXPECT_EQ(out, RowOf(8));
}

TEST(ColdRowFileTest, AForgottenPartitionIsFoundNoMoreUntilStoredAgain) {
  testing::TempDir dir;
  auto file = MakeFile(dir.path(), 1 << 20);
  ASSERT_NE(file, nullptr);
  for (uint64_t key = 0; key < 64; ++key) file->Store(key % kPartitions, key, RowOf(key), false);
  file->ForgetPartition(2);
  std::vector<float> out(kFloats);
  bool changed = false;
  for (uint64_t key = 0; key < 64; ++key) {
    EXPECT_EQ(file->Find(key % kPartitions, key, out.data(), &changed), key % kPartitions != 2)
        << "key " << key;
  }
  file->Store(2, 10, RowOf(10, 2), false);
  ASSERT_TRUE(file->Find(2, 10, out.data(), &changed));
  EXPECT_EQ(out, RowOf(10, 2));
  EXPECT_FALSE(file->Find(2, 18, out.data(), &changed));
  for (uint32_t p = 0; p < kPartitions; ++p) file->ForgetPartition(p);
  for (uint64_t key = 0; key < 64; ++key) {
    EXPECT_FALSE(file->Find(key % kPartitions, key, out.data(), &changed)) << "key " << key;
  }
}

TEST(ColdRowFileTest, AFullFileKeepsTheRowsStoredLast) {
  testing::TempDir dir;
  auto file = MakeFile(dir.path(), 1);  // one bucket
  ASSERT_NE(file, nullptr);
  const uint64_t slots = file->slots();
  ASSERT_GE(slots, 4u);
  // Stale slots (a forgotten partition's) are taken before live ones.
  file->Store(1, 1, RowOf(1), false);
  file->ForgetPartition(1);
  for (uint64_t key = 100; key < 100 + slots; ++key) file->Store(0, key, RowOf(key), false);
  std::vector<float> out(kFloats);
  bool changed = false;
  for (uint64_t key = 100; key < 100 + slots; ++key) {
    EXPECT_TRUE(file->Find(0, key, out.data(), &changed)) << "key " << key;
  }
  // Then each new row replaces the slots in turn: the last `slots` rows stored are all held.
  for (uint64_t key = 1000; key < 1000 + 3 * slots + 1; ++key)
    file->Store(0, key, RowOf(key), false);
  uint64_t held = 0;
  for (uint64_t key = 1000 + 2 * slots + 1; key < 1000 + 3 * slots + 1; ++key) {
    ASSERT_TRUE(file->Find(0, key, out.data(), &changed)) << "key " << key;
    EXPECT_EQ(out, RowOf(key));
    ++held;
  }
  EXPECT_EQ(held, slots);
  EXPECT_FALSE(file->Find(0, 100, out.data(), &changed));
}

TEST(ColdRowFileTest, AChangedRowIsReplacedOnlyByItsOwnKeyOrForgotten) {
  testing::TempDir dir;
  auto file = MakeFile(dir.path(), 1);  // one bucket
  ASSERT_NE(file, nullptr);
  const uint64_t slots = file->slots();
  std::vector<float> out(kFloats);
  bool changed = false;
  // Every slot but one changed: unchanged rows all go through the one slot left.
  for (uint64_t key = 0; key + 1 < slots; ++key) ASSERT_TRUE(file->Store(0, key, RowOf(key), true));
  for (uint64_t key = 100; key < 110; ++key) ASSERT_TRUE(file->Store(0, key, RowOf(key), false));
  EXPECT_TRUE(file->Find(0, 109, out.data(), &changed));
  EXPECT_FALSE(changed);
  EXPECT_FALSE(file->HoldsChanged(0, 109));
  EXPECT_FALSE(file->Find(0, 108, out.data(), &changed));
  for (uint64_t key = 0; key + 1 < slots; ++key) {
    ASSERT_TRUE(file->Find(0, key, out.data(), &changed)) << "key " << key;
    EXPECT_TRUE(changed);
    EXPECT_TRUE(file->HoldsChanged(0, key));
    EXPECT_EQ(out, RowOf(key));
  }
  // The last slot changed too: a new key is refused, a held one is stored in place either way.
  ASSERT_TRUE(file->Store(0, 109, RowOf(109, 1), true));
  EXPECT_FALSE(file->Store(0, 200, RowOf(200), false));
  EXPECT_FALSE(file->Store(0, 201, RowOf(201), true));
  EXPECT_FALSE(file->Find(0, 200, out.data(), &changed));
  ASSERT_TRUE(file->Store(0, 1, RowOf(1, 2), false));
  ASSERT_TRUE(file->Find(0, 1, out.data(), &changed));
  EXPECT_FALSE(changed);
  EXPECT_EQ(out, RowOf(1, 2));
  // Marked unchanged, a row stays as stored.
  file->MarkUnchanged(0, 2);
  ASSERT_TRUE(file->Find(0, 2, out.data(), &changed));
  EXPECT_FALSE(changed);
  EXPECT_EQ(out, RowOf(2));
  EXPECT_TRUE(file->Store(0, 2, RowOf(2), true));  // changed again, for what follows
  // Key 1's slot is unchanged now: the next new key takes it.
  ASSERT_TRUE(file->Store(0, 202, RowOf(202), true));
  EXPECT_FALSE(file->Find(0, 1, out.data(), &changed));
  // A forgotten partition's changed rows are gone, and their slots free.
  file->ForgetPartition(0);
  EXPECT_FALSE(file->HoldsChanged(0, 0));
  for (uint64_t key = 300; key < 300 + slots; ++key) {
    ASSERT_TRUE(file->Store(1, key, RowOf(key), true)) << "key " << key;
  }
}

TEST(ColdRowFileTest, RowsStoredAndFoundInBatchesAreEachKeysOwn) {
  testing::TempDir dir;
  auto file = MakeFile(dir.path(), 1);  // one bucket: every key's hint is beside every other's
  ASSERT_NE(file, nullptr);
  const uint64_t slots = file->slots();
  // Round after round a bucket's worth of new keys replaces the last: among thousands of keys in
  // one bucket, some share a fingerprint, and each must still find only its own row.
  for (uint64_t round = 0; round < 60; ++round) {
    std::vector<std::vector<float>> rows;
    std::vector<ColdRowFile::RowToStore> to_store;
    std::vector<uint32_t> partitions;
    std::vector<uint64_t> keys;
    for (uint64_t key = round * slots; key < (round + 1) * slots; ++key) {
      rows.push_back(RowOf(key, static_cast<float>(round)));
    }
    for (uint64_t key = round * slots; key < (round + 1) * slots; ++key) {
      to_store.push_back(
          {static_cast<uint32_t>(key % kPartitions), key, rows[key - round * slots].data()});
    }
    size_t refused = 0;
    file->StoreEach(to_store, /*changed=*/false, [&](size_t) { ++refused; });
    EXPECT_EQ(refused, 0u) << "round " << round;
    // This round's keys, then the last round's (all replaced), then one under another partition.
    const uint64_t first = round == 0 ? 0 : (round - 1) * slots;
    for (uint64_t key = round * slots; key < (round + 1) * slots; ++key) keys.push_back(key);
    for (uint64_t key = first; key < round * slots; ++key) keys.push_back(key);
    keys.push_back(round * slots);
    for (uint64_t key : keys) partitions.push_back(static_cast<uint32_t>(key % kPartitions));
    partitions.back() = (partitions.back() + 1) % kPartitions;
    size_t next = 0;
    file->FindEach(
        partitions, keys,
        [&](size_t i, const float* row, bool changed) {
          ASSERT_EQ(i, next++);
          ASSERT_LT(i, slots) << "round " << round << ": key " << keys[i] << " found";
          EXPECT_FALSE(changed);
          EXPECT_EQ(std::vector<float>(row, row + kFloats), rows[i]) << "key " << keys[i];
        },
        [&](size_t i) {
          ASSERT_EQ(i, next++);
          EXPECT_GE(i, slots) << "round " << round << ": key " << keys[i] << " missed";
        });
    EXPECT_EQ(next, keys.size());
  }
  // A bucket of changed rows refuses each new key, and says which.
  std::vector<float> row = RowOf(1);
  std::vector<ColdRowFile::RowToStore> changed_rows;
  for (uint64_t key = 0; key < slots + 3; ++key) changed_rows.push_back({0, key, row.data()});
  std::vector<size_t> refused;
  file->StoreEach(changed_rows, /*changed=*/true, [&](size_t i) { refused.push_back(i); });
  EXPECT_EQ(refused, (std::vector<size_t>{slots, slots + 1, slots + 2}));
}

TEST(ColdRowFileTest, ALargeFileHoldsRowsInEveryBucketOnceZeroedBehindCreate) {
  testing::TempDir dir;
  auto file = MakeFile(dir.path(), uint64_t{80} << 20);  // past what Create zeroes itself
  ASSERT_NE(file, nullptr);
  // Rows stored meanwhile land only in the chunks zeroed already; every one found is as stored.
  std::vector<float> out(kFloats);
  bool changed = false;
  for (uint64_t key = 0; key < 20000; ++key) file->Store(key % kPartitions, key, RowOf(key), false);
  for (uint64_t key = 0; key < 20000; ++key) {
    if (file->Find(key % kPartitions, key, out.data(), &changed)) EXPECT_EQ(out, RowOf(key));
  }
  for (int waited = 0; !file->ready() && waited < 600; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(file->ready());
  for (uint64_t key = 0; key < 20000; ++key)
    file->Store(key % kPartitions, key, RowOf(key, 1), false);
  for (uint64_t key = 0; key < 20000; ++key) {
    ASSERT_TRUE(file->Find(key % kPartitions, key, out.data(), &changed)) << "key " << key;
    EXPECT_EQ(out, RowOf(key, 1));
  }
}

TEST(ColdRowFileTest, LeavesNothingInItsDirectoryAndNamesADirectoryItCannotUse) {
  testing::TempDir dir;
  auto file = MakeFile(dir.path(), 1 << 16);
  ASSERT_NE(file, nullptr);
  EXPECT_GE(file->file_bytes(), 1u << 15);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
  const std::string missing = dir.path() + "/no/such/dir";
  auto failed = ColdRowFile::Create(missing, kFloats, kPartitions, 1 << 16);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find(missing), std::string::npos)
      << failed.status().ToString();
  EXPECT_FALSE(ColdRowFile::Create(dir.path(), 0, kPartitions, 1 << 16).ok());
}

}  // namespace
}  // namespace ember::embedding
