// Tests for RowStore: any key value, growth, pointer stability, iteration and clearing.
#include "embedding/row_store.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <vector>

#include "common/hash.h"
#include "embedding/slab_arena.h"

namespace ember::embedding {
namespace {

constexpr uint32_t kFloats = 3;

void FillRow(float* row, uint64_t key) {
  for (uint32_t i = 0; i < kFloats; ++i) row[i] = static_cast<float>((key % 1000003) + i);
}

bool RowHolds(const float* row, uint64_t key) {
  for (uint32_t i = 0; i < kFloats; ++i) {
    if (row[i] != static_cast<float>((key % 1000003) + i)) return false;
  }
  return true;
}

TEST(RowStoreTest, EmptyStoreFindsNothing) {
  RowStore store(kFloats);
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.Find(0), nullptr);
  EXPECT_EQ(store.Find(UINT64_MAX), nullptr);
}

TEST(RowStoreTest, ZeroAndMaxAreOrdinaryKeys) {
  RowStore store(kFloats);
  auto [zero_row, zero_new] = store.FindOrInsert(0);
  EXPECT_TRUE(zero_new);
  EXPECT_EQ(store.Find(UINT64_MAX), nullptr);
  auto [max_row, max_new] = store.FindOrInsert(UINT64_MAX);
  EXPECT_TRUE(max_new);
  EXPECT_NE(zero_row, max_row);
  FillRow(zero_row, 0);
  FillRow(max_row, UINT64_MAX);
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(store.Find(0), zero_row);
  EXPECT_EQ(store.Find(UINT64_MAX), max_row);
  auto [again, again_new] = store.FindOrInsert(0);
  EXPECT_FALSE(again_new);
  EXPECT_EQ(again, zero_row);
  EXPECT_TRUE(RowHolds(store.Find(0), 0));
  EXPECT_TRUE(RowHolds(store.Find(UINT64_MAX), UINT64_MAX));
}

TEST(RowStoreTest, GrowthKeepsValuesAndRowPointers) {
  RowStore store(kFloats);
  std::map<uint64_t, float*> first_rows;
  auto key_of = [](uint64_t i) { return i % 2 == 0 ? i : Mix64(i); };  // dense and scattered
  for (uint64_t i = 0; i < 1000; ++i) {
    auto [row, inserted] = store.FindOrInsert(key_of(i));
    ASSERT_TRUE(inserted);
    FillRow(row, key_of(i));
    first_rows[key_of(i)] = row;
  }
  const size_t bytes_before = store.bytes();
  for (uint64_t i = 1000; i < 100000; ++i) {
    auto [row, inserted] = store.FindOrInsert(key_of(i));
    ASSERT_TRUE(inserted);
    FillRow(row, key_of(i));
  }
  EXPECT_EQ(store.size(), 100000u);
  EXPECT_GT(store.bytes(), bytes_before);
  EXPECT_GE(store.bytes(), 100000u * kFloats * sizeof(float));
  for (const auto& [key, row] : first_rows) {
    ASSERT_EQ(store.Find(key), row) << key;
  }
  for (uint64_t i = 0; i < 100000; ++i) {
    const float* row = store.Find(key_of(i));
    ASSERT_NE(row, nullptr) << i;
    ASSERT_TRUE(RowHolds(row, key_of(i))) << i;
  }
  EXPECT_EQ(store.Find(Mix64(100001)), nullptr);
}

TEST(RowStoreTest, ForEachVisitsEveryRowOnce) {
  RowStore store(kFloats);
  for (uint64_t key = 0; key < 500; ++key) FillRow(store.FindOrInsert(key * 7919).first, key);
  std::map<uint64_t, int> seen;
  const RowStore& const_store = store;
  const_store.ForEach([&](uint64_t key, const float* row) {
    ++seen[key];
    EXPECT_TRUE(RowHolds(row, key / 7919));
  });
  EXPECT_EQ(seen.size(), 500u);
  for (const auto& [key, count] : seen) EXPECT_EQ(count, 1) << key;

  store.ForEach([](uint64_t, float* row) { row[0] = -1.0f; });
  EXPECT_EQ(store.Find(7919)[0], -1.0f);
}

TEST(RowStoreTest, ClearDropsEverythingAndStaysUsable) {
  RowStore store(kFloats);
  for (uint64_t key = 0; key < 10000; ++key) FillRow(store.FindOrInsert(key).first, key);
  store.Clear();
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.bytes(), 0u);
  EXPECT_EQ(store.Find(5), nullptr);
  auto [row, inserted] = store.FindOrInsert(5);
  EXPECT_TRUE(inserted);
  FillRow(row, 5);
  EXPECT_TRUE(RowHolds(store.Find(5), 5));
  EXPECT_EQ(store.size(), 1u);
}

TEST(RowStoreTest, EraseKeepsEveryOtherRowFindableAndReusesTheFloats) {
  RowStore store(kFloats);
  std::map<uint64_t, float*> live;
  for (uint64_t key = 0; key < 5000; ++key) {
    float* row = store.FindOrInsert(key * 7919).first;
    FillRow(row, key * 7919);
    live[key * 7919] = row;
  }
  // Erase every third key (long probe runs included), then check all the others.
  for (uint64_t key = 0; key < 5000; key += 3) {
    EXPECT_TRUE(store.Erase(key * 7919));
    live.erase(key * 7919);
  }
  EXPECT_FALSE(store.Erase(3));  // absent
  EXPECT_EQ(store.size(), live.size());
  for (const auto& [key, row] : live) {
    ASSERT_EQ(store.Find(key), row) << key;
    EXPECT_TRUE(RowHolds(row, key));
  }
  for (uint64_t key = 0; key < 5000; key += 3) EXPECT_EQ(store.Find(key * 7919), nullptr);
  const size_t bytes = store.bytes();
  for (uint64_t key = 0; key < 5000; key += 3) {
    auto [row, inserted] = store.FindOrInsert(key * 7919 + 1);
    EXPECT_TRUE(inserted);
    FillRow(row, key * 7919 + 1);
  }
  EXPECT_EQ(store.bytes(), bytes);  // erased rows were reused, no new chunk
  for (const auto& [key, row] : live) EXPECT_EQ(store.Find(key), row) << key;
}

TEST(RowStoreTest, MovedFromStoreIsEmptyAndUsable) {
  RowStore store(kFloats);
  float* row = store.FindOrInsert(9).first;
  FillRow(row, 9);
  RowStore moved(std::move(store));
  EXPECT_EQ(moved.Find(9), row);
  EXPECT_EQ(store.size(), 0u);  // NOLINT(bugprone-use-after-move): documented behaviour
  EXPECT_EQ(store.Find(9), nullptr);
  FillRow(store.FindOrInsert(10).first, 10);
  EXPECT_TRUE(RowHolds(moved.Find(9), 9));
  EXPECT_TRUE(RowHolds(store.Find(10), 10));
}

TEST(RowStoreTest, MemoryGoesBackToTheArenaOnClearAndDestruction) {
  constexpr uint32_t kWideFloats = 32;
  constexpr uint64_t kRows = 200'000;  // 25.6 MB of rows
  // The arena may keep one empty slab per block size in reserve.
  constexpr size_t kReserveBound = 13 * SlabArena::kSlabBytes;
  const size_t before = SlabArena::Shared().mapped_bytes();
  {
    RowStore store(kWideFloats);
    for (int round = 0; round < 2; ++round) {
      for (uint64_t key = 0; key < kRows; ++key)
        store.FindOrInsert(Mix64(key)).first[kWideFloats - 1] = 1.0f;
      EXPECT_GE(SlabArena::Shared().mapped_bytes(), before + kRows * kWideFloats * sizeof(float));
      EXPECT_GE(store.bytes(), kRows * kWideFloats * sizeof(float));
      store.Clear();
      EXPECT_EQ(store.bytes(), 0u);
      EXPECT_LE(SlabArena::Shared().mapped_bytes(), before + kReserveBound);
    }
    store.FindOrInsert(1);
  }
  EXPECT_LE(SlabArena::Shared().mapped_bytes(), before + kReserveBound);
}

}  // namespace
}  // namespace ember::embedding
