// ShardService: the serving path. A lookup is checked like a pull (keys per message, table, reply
// size, partition ownership) and answered with the rows the table holds, without creating,
// admitting or loading any row and without touching optimizer state (EmbeddingTable::Lookup).
// A follow request is a serving replica's stream of changed rows (followers.h).
#include "ps/server/shard_service.h"

namespace ember::ps {

Frame ShardService::HandleLookup(const wire::RequestHeader& header,
                                 const wire::LookupRequest& lookup) {
  if (Status fits = CheckKeyCount("lookup", lookup.table, lookup.keys.size()); !fits.ok()) {
    return Error(header.request_id, fits);
  }
  auto table = FindTable(lookup.table);
  if (!table.ok()) return Error(header.request_id, table.status().WithContext("lookup"));
  const uint32_t dim = (*table)->spec().dim;
  const size_t num_floats = lookup.keys.size() * dim;
  if (Status fits = wire::CheckPullReplySize(num_floats, lookup.row_format); !fits.ok()) {
    return Error(
        header.request_id,
        fits.WithContext("lookup of " + std::to_string(lookup.keys.size()) + " keys of table '" +
                         lookup.table + "' (dim " + std::to_string(dim) + ")"));
  }
  std::shared_lock moves(transfer_mutex_);
  wire::PullReply reply(header.request_id, ownership_.epoch(), num_floats, lookup.row_format,
                        wire::PullReply::Lookup{lookup.keys.size()});
  Status status = (*table)->Lookup(lookup.keys, reply.rows(), lookup.missing, reply.found(),
                                   ownership_.ServedCheck(lookup.table));
  if (!status.ok()) return Error(header.request_id, status.WithContext("lookup"));
  return reply.Finish();
}

Frame ShardService::HandleFollow(const wire::RequestHeader& header,
                                 const wire::FollowRequest& follow) {
  auto table = FindTable(follow.table);
  if (!table.ok()) return Error(header.request_id, table.status().WithContext("follow"));
  // No partition changes state while the stream reads it.
  std::shared_lock moves(transfer_mutex_);
  auto state = [&](uint32_t p) {
    if (ownership_.serves(p)) return FollowedPartition::kServed;
    return ownership_.state(p) == PartitionState::kHandedOver ? FollowedPartition::kHeld
                                                              : FollowedPartition::kGone;
  };
  auto batch = followers_.Follow(follow, **table, state, counters_.limits_hit());
  if (!batch.ok()) return Error(header.request_id, batch.status().WithContext("follow"));
  return wire::EncodeFollowResponse(header.request_id, ownership_.epoch(), batch->View());
}

}  // namespace ember::ps
