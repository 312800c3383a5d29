// ShardService: read-only lookups (the serving path). A lookup is checked like a pull (keys per
// message, table, reply size, partition ownership) and answered with the rows the table holds,
// without creating, admitting or loading any row and without touching optimizer state
// (EmbeddingTable::Lookup).
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

}  // namespace ember::ps
