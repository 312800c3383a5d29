// ShardService: applying a bsp clock's deferred pushes.
#include "ps/shard_service.h"

namespace ember::ps {

zmq::message_t ShardService::HandleApplyClock(const wire::RequestHeader& header,
                                              const wire::ApplyClockRequest& apply) {
  Status applied = deferred_.Apply(
      apply.clock, apply.trainers, apply.combine,
      [this](const std::string& name, std::span<const uint64_t> keys,
             std::span<const float> gradients) -> Status {
        ASSIGN_OR_RETURN(embedding::EmbeddingTable * table, FindTable(name));
        return table->Push(keys, gradients);
      });
  if (!applied.ok()) {
    return Error(header.request_id,
                 applied.WithContext("applying clock " + std::to_string(apply.clock)));
  }
  return wire::EncodeStatusResponse(header.request_id, routing_.epoch, Status::Ok());
}

}  // namespace ember::ps
