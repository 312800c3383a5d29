// SlabArena: memory for row stores, in blocks carved from 2 MiB slabs that the kernel is asked
// to back with transparent huge pages.
//
// A lookup touches one index entry and one row at random places of a table many GiB large. On
// 4 KiB pages nearly each of those is a TLB miss and a page walk; on 2 MiB pages the walks are
// few and short (the table-only pull and push rates rise by about half at 10M rows).
//
// Blocks are powers of two from kMinBlockBytes up to half a slab; each slab holds blocks of one
// size only, so a block is aligned to its size and partitions of every size share huge pages
// rather than each rounding up to its own. A request of a slab or more gets a 2 MiB-aligned
// mapping of its own. A slab whose blocks are all free goes back to the kernel, unless it is the
// only reserve left for its size (so a store growing and shrinking across a boundary does not
// map and unmap 2 MiB each time).
//
// Memory from the arena is not zeroed. Thread-safe; one arena serves the process (Shared()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace ember::embedding {

class SlabArena {
 public:
  static constexpr size_t kSlabBytes = size_t{2} << 20;
  static constexpr size_t kMinBlockBytes = 256;

  static SlabArena& Shared();

  SlabArena() = default;
  ~SlabArena();
  SlabArena(const SlabArena&) = delete;
  SlabArena& operator=(const SlabArena&) = delete;

  // The size of the block Allocate(bytes) hands out: the next power of two, at least
  // kMinBlockBytes, below a slab; a whole number of slabs from a slab up.
  static size_t BlockBytes(size_t bytes);

  // A block of BlockBytes(bytes) bytes, aligned to its size (to a slab when larger). Throws
  // std::bad_alloc when the kernel has no memory to give.
  void* Allocate(size_t bytes);
  // Returns a block; `bytes` is what was asked of Allocate.
  void Free(void* block, size_t bytes);

  // Bytes mapped from the kernel: slabs (used or not) and large blocks.
  size_t mapped_bytes() const;

 private:
  static constexpr int kSizeClasses = 13;  // 256 B .. 1 MiB

  struct SizeClass {
    std::vector<void*> free_blocks;
  };

  static int SizeClassOf(size_t block_bytes);
  static void* MapAligned(size_t bytes);
  void ReleaseSlabIfUnused(uintptr_t slab, int size_class);

  mutable std::mutex mu_;
  SizeClass classes_[kSizeClasses];
  std::unordered_map<uintptr_t, uint32_t> blocks_in_use_;  // per slab address
  size_t mapped_bytes_ = 0;
};

}  // namespace ember::embedding
