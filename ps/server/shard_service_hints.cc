// ShardService, look-ahead: a hint request, checked and queued for the prefetch thread
// (lookahead_hints.h).
#include "common/quote_for_error.h"
#include "ps/server/shard_service.h"

namespace ember::ps {

Frame ShardService::HandleHint(const wire::RequestHeader& header, const wire::HintRequest& hint,
                               const Peer& peer) {
  if (Status fits = CheckKeyCount("hint", hint.table, hint.keys.size()); !fits.ok()) {
    return Error(header.request_id, fits);
  }
  auto table = FindTable(hint.table);
  if (!table.ok()) return Error(header.request_id, table.status().WithContext("hint"));
  // A table in memory has nothing to read ahead.
  if (hints_ == nullptr || !(*table)->tiered() || hint.keys.empty()) {
    return wire::EncodeStatusResponse(header.request_id, ownership_.epoch(), Status::Ok());
  }
  if (!hints_->Offer(**table, peer, hint.sender, hint.hint, hint.keys, hint.ttl_ms)) {
    counters_.limits_hit().Count(Limit::kQueuedHints);
    return Error(header.request_id,
                 LimitExceeded(Limit::kQueuedHints, policy_.limits.queued_hints,
                               "hint of " + std::to_string(hint.keys.size()) + " keys of table " +
                                   QuoteForError(hint.table)));
  }
  return wire::EncodeStatusResponse(header.request_id, ownership_.epoch(), Status::Ok());
}

}  // namespace ember::ps
