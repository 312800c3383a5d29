// Tests for SlabArena: block sizes and alignment, reuse, and giving slabs back to the kernel.
#include "embedding/slab_arena.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

namespace ember::embedding {
namespace {

constexpr size_t kSlab = SlabArena::kSlabBytes;

uintptr_t Address(const void* block) { return reinterpret_cast<uintptr_t>(block); }

TEST(SlabArenaTest, BlockSizesArePowersOfTwoThenWholeSlabs) {
  EXPECT_EQ(SlabArena::BlockBytes(1), SlabArena::kMinBlockBytes);
  EXPECT_EQ(SlabArena::BlockBytes(256), 256u);
  EXPECT_EQ(SlabArena::BlockBytes(257), 512u);
  EXPECT_EQ(SlabArena::BlockBytes(kSlab / 2 + 1), kSlab);
  EXPECT_EQ(SlabArena::BlockBytes(kSlab), kSlab);
  EXPECT_EQ(SlabArena::BlockBytes(kSlab + 1), 2 * kSlab);
  EXPECT_EQ(SlabArena::BlockBytes(5 * kSlab - 3), 5 * kSlab);
}

TEST(SlabArenaTest, BlocksAreAlignedDistinctAndWritable) {
  SlabArena arena;
  std::vector<std::pair<void*, size_t>> blocks;
  std::set<uintptr_t> starts;
  for (size_t bytes : {100u, 256u, 4000u, 65536u, 300000u, 1u << 20, 3u << 20}) {
    for (int copy = 0; copy < 3; ++copy) {
      void* block = arena.Allocate(bytes);
      const size_t block_bytes = SlabArena::BlockBytes(bytes);
      EXPECT_EQ(Address(block) % std::min(block_bytes, kSlab), 0u) << bytes;
      EXPECT_TRUE(starts.insert(Address(block)).second) << "block handed out twice";
      std::memset(block, copy + 1, block_bytes);
      blocks.emplace_back(block, bytes);
    }
  }
  // No block overlaps another: each still holds what was written into it.
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto* bytes = static_cast<const unsigned char*>(blocks[i].first);
    const size_t block_bytes = SlabArena::BlockBytes(blocks[i].second);
    EXPECT_EQ(bytes[0], i % 3 + 1);
    EXPECT_EQ(bytes[block_bytes - 1], i % 3 + 1);
  }
  for (const auto& [block, bytes] : blocks) arena.Free(block, bytes);
}

TEST(SlabArenaTest, FreedBlocksAreReused) {
  SlabArena arena;
  void* first = arena.Allocate(1000);
  arena.Free(first, 1000);
  EXPECT_EQ(arena.Allocate(1000), first);
  EXPECT_EQ(arena.mapped_bytes(), kSlab);
}

TEST(SlabArenaTest, EmptySlabsGoBackToTheKernelBeyondOneInReserve) {
  SlabArena arena;
  constexpr size_t kBlock = 64 << 10;  // 32 blocks per slab
  std::vector<void*> blocks;
  for (size_t i = 0; i < 4 * kSlab / kBlock; ++i) blocks.push_back(arena.Allocate(kBlock));
  EXPECT_EQ(arena.mapped_bytes(), 4 * kSlab);
  for (void* block : blocks) arena.Free(block, kBlock);
  EXPECT_EQ(arena.mapped_bytes(), kSlab);
  // The slab kept in reserve serves the next blocks without mapping more.
  void* again = arena.Allocate(kBlock);
  EXPECT_EQ(arena.mapped_bytes(), kSlab);
  arena.Free(again, kBlock);
}

TEST(SlabArenaTest, LargeBlocksAreMappedAndUnmappedOnTheirOwn) {
  SlabArena arena;
  void* large = arena.Allocate(3 * kSlab + 5);
  EXPECT_EQ(arena.mapped_bytes(), 4 * kSlab);
  std::memset(large, 7, 4 * kSlab);
  arena.Free(large, 3 * kSlab + 5);
  EXPECT_EQ(arena.mapped_bytes(), 0u);
}

TEST(SlabArenaTest, FreeingABlockItDidNotHandOutDies) {
  SlabArena arena;
  alignas(64) static char foreign[512];
  EXPECT_DEATH(arena.Free(foreign, sizeof(foreign)), "did not hand out");
}

}  // namespace
}  // namespace ember::embedding
