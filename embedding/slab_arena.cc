// SlabArena implementation: size-class free lists over 2 MiB huge-page slabs.
#include "embedding/slab_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <new>

#include "common/check.h"

namespace ember::embedding {
namespace {

uintptr_t SlabOf(const void* block) {
  return reinterpret_cast<uintptr_t>(block) & ~uintptr_t{SlabArena::kSlabBytes - 1};
}

size_t RoundUp(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

}  // namespace

SlabArena& SlabArena::Shared() {
  // Never destroyed: row stores of static objects may outlive any destruction order.
  static SlabArena* const arena = new SlabArena();
  return *arena;
}

SlabArena::~SlabArena() {
  for (const auto& [slab, in_use] : blocks_in_use_) {
    munmap(reinterpret_cast<void*>(slab), kSlabBytes);
  }
}

size_t SlabArena::BlockBytes(size_t bytes) {
  if (bytes >= kSlabBytes) return RoundUp(bytes, kSlabBytes);
  return std::max(kMinBlockBytes, std::bit_ceil(bytes));
}

int SlabArena::SizeClassOf(size_t block_bytes) {
  return std::countr_zero(block_bytes) - std::countr_zero(kMinBlockBytes);
}

void* SlabArena::MapAligned(size_t bytes) {
  // Over-map by a slab, then trim the ends so the block starts on a slab boundary.
  const size_t span = bytes + kSlabBytes;
  void* mapped = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = RoundUp(start, kSlabBytes);
  if (aligned > start) munmap(mapped, aligned - start);
  const uintptr_t tail = aligned + bytes;
  if (start + span > tail) munmap(reinterpret_cast<void*>(tail), start + span - tail);
  void* block = reinterpret_cast<void*>(aligned);
  // Advice only: without transparent huge pages the block works on small pages.
  madvise(block, bytes, MADV_HUGEPAGE);
  return block;
}

void* SlabArena::Allocate(size_t bytes) {
  const size_t block_bytes = BlockBytes(bytes);
  if (block_bytes >= kSlabBytes) {
    void* block = MapAligned(block_bytes);
    std::lock_guard<std::mutex> lock(mu_);
    mapped_bytes_ += block_bytes;
    return block;
  }
  const int size_class = SizeClassOf(block_bytes);
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<void*>& free_blocks = classes_[size_class].free_blocks;
  if (free_blocks.empty()) {
    char* slab = static_cast<char*>(MapAligned(kSlabBytes));
    mapped_bytes_ += kSlabBytes;
    blocks_in_use_.emplace(reinterpret_cast<uintptr_t>(slab), 0);
    // Highest address first, so blocks are handed out in address order.
    for (size_t offset = kSlabBytes; offset > 0; offset -= block_bytes) {
      free_blocks.push_back(slab + offset - block_bytes);
    }
  }
  void* block = free_blocks.back();
  free_blocks.pop_back();
  ++blocks_in_use_[SlabOf(block)];
  return block;
}

void SlabArena::Free(void* block, size_t bytes) {
  if (block == nullptr) return;
  const size_t block_bytes = BlockBytes(bytes);
  if (block_bytes >= kSlabBytes) {
    munmap(block, block_bytes);
    std::lock_guard<std::mutex> lock(mu_);
    mapped_bytes_ -= block_bytes;
    return;
  }
  const int size_class = SizeClassOf(block_bytes);
  std::lock_guard<std::mutex> lock(mu_);
  const uintptr_t slab = SlabOf(block);
  auto it = blocks_in_use_.find(slab);
  EMBER_CHECK(it != blocks_in_use_.end() && it->second > 0,
              "freeing a block the slab arena did not hand out");
  classes_[size_class].free_blocks.push_back(block);
  if (--it->second == 0) ReleaseSlabIfUnused(slab, size_class);
}

void SlabArena::ReleaseSlabIfUnused(uintptr_t slab, int size_class) {
  std::vector<void*>& free_blocks = classes_[size_class].free_blocks;
  const size_t blocks_per_slab = kSlabBytes / (kMinBlockBytes << size_class);
  // Keep one slab's worth of free blocks of this size in reserve.
  if (free_blocks.size() < 2 * blocks_per_slab) return;
  std::erase_if(free_blocks, [slab](void* block) { return SlabOf(block) == slab; });
  blocks_in_use_.erase(slab);
  munmap(reinterpret_cast<void*>(slab), kSlabBytes);
  mapped_bytes_ -= kSlabBytes;
}

size_t SlabArena::mapped_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mapped_bytes_;
}

}  // namespace ember::embedding
