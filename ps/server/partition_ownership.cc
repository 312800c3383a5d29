// PartitionOwnership: the errors of its ownership check.
#include "ps/server/partition_ownership.h"

#include <string>

namespace ember::ps {

Status PartitionOwnership::NotServed(std::string_view table, uint64_t key,
                                     uint32_t partition) const {
  // A partition being handed over, or arriving here: the move is under way or decided, and the
  // client may retry (one routed here has seen a commit whose answer to this server may be late,
  // as when the scheduler restarted).
  const PartitionState moving = state(partition);
  if (moving == PartitionState::kHandedOver || moving == PartitionState::kIncoming) {
    return Unavailable("partition " + std::to_string(partition) + " of server " +
                       std::to_string(server_) +
                       (moving == PartitionState::kHandedOver ? " is being handed over; retry"
                                                              : " is still arriving; retry"));
  }
  return FailedPrecondition("key " + std::to_string(key) + " of table '" + std::string(table) +
                            "' is in partition " + std::to_string(partition) + ", which server " +
                            std::to_string(server_) + " does not own at epoch " +
                            std::to_string(epoch()));
}

}  // namespace ember::ps
