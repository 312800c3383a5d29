// PartitionOwnership: the errors of its ownership check.
#include "ps/server/partition_ownership.h"

#include <string>

namespace ember::ps {

Status PartitionOwnership::NotServed(std::string_view table, uint64_t key,
                                     uint32_t partition) const {
  if (state(partition) == PartitionState::kHandedOver) {
    return Unavailable("partition " + std::to_string(partition) + " of server " +
                       std::to_string(server_) + " is being handed over; retry");
  }
  // Its rows are here and the move may have committed (a routing table naming this server is how
  // a client got here) while the commit's answer is late, as when the scheduler restarted.
  if (state(partition) == PartitionState::kIncoming) {
    return Unavailable("partition " + std::to_string(partition) + " of server " +
                       std::to_string(server_) + " is still arriving; retry");
  }
  return FailedPrecondition("key " + std::to_string(key) + " of table '" + std::string(table) +
                            "' is in partition " + std::to_string(partition) + ", which server " +
                            std::to_string(server_) + " does not own at epoch " +
                            std::to_string(epoch()));
}

}  // namespace ember::ps
