// LookaheadHints: hints queued for the prefetch thread, run there on the partitions the server
// serves, and released by the push that names them.
#include "ps/server/lookahead_hints.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <random>

#include "common/hash.h"

namespace ember::ps {

LookaheadHints::LookaheadHints(uint32_t server_id, uint32_t queued,
                               std::shared_mutex& transfer_mutex,
                               const PartitionOwnership& ownership,
                               std::function<void(std::chrono::steady_clock::time_point)> sweep)
    : server_id_(server_id),
      transfer_mutex_(transfer_mutex),
      ownership_(ownership),
      salt_(uint64_t{std::random_device{}()} << 32 | std::random_device{}()),
      prefetcher_(std::make_unique<HintPrefetcher>(
          queued, [this](QueuedHint& hint) { Run(hint); }, std::move(sweep), Millis(200))) {}

uint64_t LookaheadHints::TableHintId(const Peer& peer, uint64_t sender, uint64_t hint) const {
  return HashCombine(HashCombine(salt_ ^ HashName(peer.public_key), sender), hint);
}

bool LookaheadHints::Offer(embedding::EmbeddingTable& table, const Peer& peer, uint64_t sender,
                           uint64_t hint, std::span<const uint64_t> keys, uint32_t ttl_ms) {
  const Millis lifetime =
      ttl_ms == 0 ? kDefaultLifetime : std::min(Millis(ttl_ms), kLongestLifetime);
  QueuedHint queued;
  queued.table = &table;
  queued.id = TableHintId(peer, sender, hint);
  queued.keys.assign(keys.begin(), keys.end());
  queued.expires = std::chrono::steady_clock::now() + lifetime;
  return prefetcher_->Offer(std::move(queued));
}

void LookaheadHints::Release(embedding::EmbeddingTable& table, const Peer& peer, uint64_t sender,
                             uint64_t hint) {
  const uint64_t id = TableHintId(peer, sender, hint);
  // Remembered first: the prefetch thread may be about to run it, be running it, or be about to
  // park it for a retry; whichever it is, it checks this after storing the pins, and before
  // running a hint, so that no hint holds pins after its push.
  {
    const ReleasedHint released{&table, id};
    std::lock_guard lock(released_mutex_);
    if (released_.size() >= kReleasedRemembered) {
      released_.erase(released_order_.front());
      released_order_.pop_front();
    }
    if (released_.insert(released).second) released_order_.push_back(released);
  }
  prefetcher_->Forget(&table, id);
  if (table.ReleaseHint(id)) prefetcher_->Unpark();  // its pins are free for hints that found none
}

bool LookaheadHints::TakeReleased(const QueuedHint& hint) {
  const ReleasedHint released{hint.table, hint.id};
  std::lock_guard lock(released_mutex_);
  if (released_.erase(released) == 0) return false;
  released_order_.erase(std::find(released_order_.begin(), released_order_.end(), released));
  return true;
}

void LookaheadHints::Run(QueuedHint& hint) {
  if (TakeReleased(hint)) return;  // its push came first
  // Under the lock a partition changing hands takes exclusively: a partition served now stays so
  // until the rows are in, and rows of one that moved away are never loaded.
  std::shared_lock moves(transfer_mutex_);
  std::erase_if(hint.keys,
                [&](uint64_t key) { return !ownership_.serves(hint.table->PartitionOf(key)); });
  if (hint.keys.empty() || hint.expires <= std::chrono::steady_clock::now()) return;
  auto unpinned = hint.table->Prefetch(hint.id, hint.keys, hint.expires);
  if (!unpinned.ok()) {
    spdlog::debug("server {}: hint of {} keys of table '{}' not prefetched: {}", server_id_,
                  hint.keys.size(), hint.table->spec().name, unpinned.status().ToString());
    return;
  }
  moves.unlock();
  if (TakeReleased(hint)) {  // its push came while it ran
    hint.table->ReleaseHint(hint.id);
    prefetcher_->Unpark();
  } else if (*unpinned > 0) {
    prefetcher_->Park(std::move(hint));  // tried again, whole, when pins are released
  }
}

}  // namespace ember::ps
