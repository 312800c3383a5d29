// ShardService: applying a bsp clock's deferred pushes.
#include "ps/server/shard_service.h"

namespace ember::ps {

Frame ShardService::HandleApplyClock(const wire::RequestHeader& header,
                                              const wire::ApplyClockRequest& apply) {
  std::shared_lock moves(transfer_mutex_);
  Status applied = deferred_.Apply(
      apply.clock, apply.trainers, apply.combine,
      [this](const std::string& name, std::span<const uint64_t> keys,
             std::span<const float> gradients) -> Status {
        ASSIGN_OR_RETURN(embedding::EmbeddingTable * table, FindTable(name));
        RETURN_IF_ERROR(table->Push(keys, gradients));
        NoteChangedKeys(*table, keys, /*partitions=*/{});
        return Status::Ok();
      });
  if (!applied.ok()) {
    return Error(header.request_id,
                 applied.WithContext("applying clock " + std::to_string(apply.clock)));
  }
  return wire::EncodeStatusResponse(header.request_id, ownership_.epoch(), Status::Ok());
}

}  // namespace ember::ps
