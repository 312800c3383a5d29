// MemoryBudget: the bytes of resident rows one server may hold, shared by all its tables.
//
// Tables with a RocksDB tier charge each row they keep in memory and release it when they evict
// the row; a table that inserts while the budget is exceeded evicts rows of its own (see
// EmbeddingTable). Sharing one budget splits the memory over tables in proportion to their use.
// Only row payload (weights, optimizer state and one word of tier flags) is counted: the index
// and allocator overhead come on top (about 25%, see bytes()).
//
// Thread-safety: all methods may be called from many threads at once.
#pragma once

#include <atomic>
#include <cstdint>

namespace ember::embedding {

class MemoryBudget {
 public:
  // limit_bytes 0 means no limit.
  explicit MemoryBudget(uint64_t limit_bytes) : limit_(limit_bytes) {}

  uint64_t limit() const { return limit_; }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  bool exceeded() const { return limit_ != 0 && used() > limit_; }

  void Charge(uint64_t bytes) { used_.fetch_add(bytes, std::memory_order_relaxed); }
  void Release(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
};

}  // namespace ember::embedding
