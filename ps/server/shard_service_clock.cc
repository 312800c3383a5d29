// ShardService: applying a bsp clock's deferred pushes, as the scheduler granted the clock.
#include <spdlog/spdlog.h>

#include "common/grant_signature.h"
#include "ps/server/shard_service.h"

namespace ember::ps {

Frame ShardService::HandleApplyClock(const wire::RequestHeader& header,
                                     const wire::ApplyClockRequest& apply, const Peer& peer) {
  // A clock applied already is a no-op whoever asks (each trainer asks every server): only a
  // clock still to apply has its grant checked.
  if (peer.authenticated() && apply.clock > deferred_.applied_clock()) {
    Status granted =
        policy_.grant_key.empty()
            ? FailedPrecondition("this server has no key to check the scheduler's grants with")
            : VerifyGrant(policy_.grant_key, GrantTerms{apply.clock, apply.trainers, apply.combine},
                          apply.signature);
    if (!granted.ok()) {
      const Status refused = granted.WithContext(
          "apply-clock of clock " + std::to_string(apply.clock) + " from " + peer.Describe() +
          " refused, nothing changed");
      spdlog::warn("server {}: {}", server_id_, refused.ToString());
      return Error(header.request_id, refused);
    }
  }
  std::shared_lock moves(transfer_mutex_);
  Status applied = deferred_.Apply(
      apply.clock, apply.trainers, apply.combine,
      [this](const std::string& name, std::span<const uint64_t> keys,
             std::span<const float> gradients, float learning_rate) -> Status {
        ASSIGN_OR_RETURN(embedding::EmbeddingTable * table, FindTable(name));
        return table->Push(keys, gradients, nullptr, learning_rate);
      });
  if (!applied.ok()) {
    return Error(header.request_id,
                 applied.WithContext("applying clock " + std::to_string(apply.clock)));
  }
  return wire::EncodeStatusResponse(header.request_id, ownership_.epoch(), Status::Ok());
}

}  // namespace ember::ps
