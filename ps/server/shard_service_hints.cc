// ShardService, look-ahead: hints queued for the prefetch thread, run there on the partitions
// this server serves, and released by the push that names them.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <shared_mutex>

#include "common/hash.h"
#include "common/quote_for_error.h"
#include "ps/server/shard_service.h"

namespace ember::ps {
namespace {

// How long a hint's pins last when its sender names no lifetime, and the longest it may name.
constexpr Millis kDefaultHintLifetime{10'000};
constexpr Millis kLongestHintLifetime{60'000};
// Released hints remembered (so that none is run after its push); past this, the oldest is
// forgotten, and if it still comes its pins last until it expires.
constexpr size_t kReleasedRemembered = 4096;

}  // namespace

uint64_t ShardService::TableHintId(const Peer& peer, uint64_t sender, uint64_t hint) const {
  return HashCombine(HashCombine(hint_salt_ ^ HashName(peer.public_key), sender), hint);
}

void ShardService::ReleaseHint(embedding::EmbeddingTable& table, const Peer& peer,
                               uint64_t sender, uint64_t hint) {
  if (prefetcher_ == nullptr || !table.tiered()) return;
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

bool ShardService::TakeReleased(const QueuedHint& hint) {
  const ReleasedHint released{hint.table, hint.id};
  std::lock_guard lock(released_mutex_);
  if (released_.erase(released) == 0) return false;
  released_order_.erase(std::find(released_order_.begin(), released_order_.end(), released));
  return true;
}

void ShardService::StartPrefetcher() {
  prefetcher_ = std::make_unique<HintPrefetcher>(
      policy_.limits.queued_hints, [this](QueuedHint& hint) { RunHint(hint); },
      [this](std::chrono::steady_clock::time_point now) {
        for (const auto& [name, table] : tables_) table->ReleaseExpiredHints(now);
      },
      Millis(200));
}

Frame ShardService::HandleHint(const wire::RequestHeader& header, const wire::HintRequest& hint,
                               const Peer& peer) {
  if (Status fits = CheckKeyCount("hint", hint.table, hint.keys.size()); !fits.ok()) {
    return Error(header.request_id, fits);
  }
  auto table = FindTable(hint.table);
  if (!table.ok()) return Error(header.request_id, table.status().WithContext("hint"));
  // A table in memory has nothing to read ahead.
  if (prefetcher_ == nullptr || !(*table)->tiered() || hint.keys.empty()) {
    return wire::EncodeStatusResponse(header.request_id, ownership_.epoch(), Status::Ok());
  }
  const Millis lifetime =
      hint.ttl_ms == 0 ? kDefaultHintLifetime : std::min(Millis(hint.ttl_ms), kLongestHintLifetime);
  QueuedHint queued;
  queued.table = *table;
  queued.id = TableHintId(peer, hint.sender, hint.hint);
  queued.keys.assign(hint.keys.begin(), hint.keys.end());
  queued.expires = std::chrono::steady_clock::now() + lifetime;
  if (!prefetcher_->Offer(std::move(queued))) {
    limits_hit_.Count(Limit::kQueuedHints);
    return Error(header.request_id,
                 LimitExceeded(Limit::kQueuedHints, policy_.limits.queued_hints,
                               "hint of " + std::to_string(hint.keys.size()) + " keys of table " +
                                   QuoteForError(hint.table)));
  }
  return wire::EncodeStatusResponse(header.request_id, ownership_.epoch(), Status::Ok());
}

void ShardService::RunHint(QueuedHint& hint) {
  if (TakeReleased(hint)) return;  // its push came first
  // Under the lock a partition changing hands takes exclusively: a partition served now stays so
  // until the rows are in, and rows of one that moved away are never loaded.
  std::shared_lock moves(transfer_mutex_);
  std::erase_if(hint.keys, [&](uint64_t key) {
    return !ownership_.serves(hint.table->PartitionOf(key));
  });
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
