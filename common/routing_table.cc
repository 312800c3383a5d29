// RoutingTable helpers.
#include "common/routing_table.h"

#include <algorithm>

namespace ember {

uint32_t RoutingTable::PartitionsOwnedBy(uint32_t server_id) const {
  return static_cast<uint32_t>(std::count(owners.begin(), owners.end(), server_id));
}

RoutingTable MakeBalancedRouting(uint32_t num_partitions, std::vector<ServerInfo> servers,
                                 uint64_t epoch) {
  RoutingTable table;
  table.epoch = epoch;
  table.num_partitions = num_partitions;
  table.owners.resize(num_partitions);
  const uint64_t n = servers.size();
  for (uint32_t p = 0; p < num_partitions; ++p) {
    table.owners[p] = static_cast<uint32_t>(uint64_t{p} * n / num_partitions);
  }
  table.servers = std::move(servers);
  return table;
}

}  // namespace ember
