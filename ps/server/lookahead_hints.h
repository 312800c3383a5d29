// LookaheadHints: a tiered server's look-ahead. Hints (the keys of a batch a trainer will pull and
// push a few steps later) are queued for the prefetch thread (hint_prefetcher.h), which has the
// table read their rows from disk and pin them (EmbeddingTable::Prefetch), on the partitions the
// server serves then; the push that names a hint releases it.
//
// A table knows a hint by an id made of the sender's key, its sender id and hint id, salted with a
// secret drawn here, so that no other key can name (and release) the hint. A hint released before
// the thread ran it is remembered (the newest kReleasedRemembered), so that it does not run after
// its push; one forgotten past that holds its pins until it expires.
//
// Thread-safety: every method may be called from many threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <span>
#include <utility>

#include "common/millis.h"
#include "common/peer.h"
#include "embedding/embedding_table.h"
#include "ps/server/hint_prefetcher.h"
#include "ps/server/partition_ownership.h"

namespace ember::ps {

class LookaheadHints {
 public:
  // How long a hint's pins last when its sender names no lifetime, and the longest it may name.
  static constexpr Millis kDefaultLifetime{10'000};
  static constexpr Millis kLongestLifetime{60'000};
  static constexpr size_t kReleasedRemembered = 4096;

  // At most `queued` hints wait; `sweep` releases the tables' expired hints (every 200 ms on the
  // thread). A hint runs under `transfer_mutex` held shared, on the keys of partitions that
  // `ownership` says are served. All are borrowed and outlive this object.
  LookaheadHints(uint32_t server_id, uint32_t queued, std::shared_mutex& transfer_mutex,
                 const PartitionOwnership& ownership,
                 std::function<void(std::chrono::steady_clock::time_point)> sweep);

  // Queues `sender`'s hint `hint` of `keys` of `table` (tiered) from `peer`, lasting `ttl_ms`
  // (0: the default); false when `queued` hints wait already.
  bool Offer(embedding::EmbeddingTable& table, const Peer& peer, uint64_t sender, uint64_t hint,
             std::span<const uint64_t> keys, uint32_t ttl_ms);
  // The push that names the hint came: its pins are released, and it is not run any more.
  void Release(embedding::EmbeddingTable& table, const Peer& peer, uint64_t sender, uint64_t hint);

 private:
  using ReleasedHint = std::pair<const embedding::EmbeddingTable*, uint64_t>;

  uint64_t TableHintId(const Peer& peer, uint64_t sender, uint64_t hint) const;
  void Run(QueuedHint& hint);
  // Whether the hint was released (forgetting it then).
  bool TakeReleased(const QueuedHint& hint);

  const uint32_t server_id_;
  std::shared_mutex& transfer_mutex_;
  const PartitionOwnership& ownership_;
  const uint64_t salt_;  // random, drawn at construction: see TableHintId
  std::mutex released_mutex_;
  std::set<ReleasedHint> released_;          // guarded by released_mutex_
  std::deque<ReleasedHint> released_order_;  // the same, oldest first
  // Last, so that the thread stops before anything it uses goes.
  std::unique_ptr<HintPrefetcher> prefetcher_;
};

}  // namespace ember::ps
