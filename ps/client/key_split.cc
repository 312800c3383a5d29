// SplitByServer: each key's partition once, then a count per server (and, for a push, a stable
// counting sort by partition) so that every share is written once into a vector of its size.
#include "ps/client/key_split.h"

namespace ember::ps {
namespace {

// The partition of each key at `positions` (all keys when empty), in the same order.
std::vector<uint32_t> PartitionsOf(const Operation& op, uint32_t num_partitions,
                                   std::span<const uint32_t> positions) {
  const size_t count = positions.empty() ? op.key_count() : positions.size();
  std::vector<uint32_t> partitions(count);
  for (size_t i = 0; i < count; ++i) {
    const uint32_t position = positions.empty() ? static_cast<uint32_t>(i) : positions[i];
    const Operation::Part& part = op.PartOf(position);
    partitions[i] = PartitionOf(part.table_id, part.keys[position - part.first], num_partitions);
  }
  return partitions;
}

// The indexes 0..partitions.size()-1 ordered by partition, ascending within one partition.
std::vector<uint32_t> StableOrderByPartition(const std::vector<uint32_t>& partitions,
                                             uint32_t num_partitions) {
  std::vector<uint32_t> start(size_t{num_partitions} + 1, 0);
  for (uint32_t partition : partitions) ++start[partition + 1];
  for (uint32_t p = 0; p < num_partitions; ++p) start[p + 1] += start[p];
  std::vector<uint32_t> order(partitions.size());
  for (size_t i = 0; i < partitions.size(); ++i) {
    order[start[partitions[i]]++] = static_cast<uint32_t>(i);
  }
  return order;
}

}  // namespace

std::vector<std::vector<uint32_t>> SplitByServer(const Operation& op, const RoutingTable& routing,
                                                 std::span<const uint32_t> positions) {
  const std::vector<uint32_t> partitions = PartitionsOf(op, routing.num_partitions, positions);
  std::vector<size_t> shares(routing.servers.size(), 0);
  for (uint32_t partition : partitions) ++shares[routing.owners[partition]];
  std::vector<std::vector<uint32_t>> by_server(routing.servers.size());
  for (size_t server = 0; server < by_server.size(); ++server) {
    by_server[server].reserve(shares[server]);
  }
  const auto place = [&](size_t i) {
    const uint32_t position = positions.empty() ? static_cast<uint32_t>(i) : positions[i];
    by_server[routing.owners[partitions[i]]].push_back(position);
  };
  if (op.kind == Operation::Kind::kPush) {
    for (uint32_t i : StableOrderByPartition(partitions, routing.num_partitions)) place(i);
  } else {
    for (size_t i = 0; i < partitions.size(); ++i) place(i);
  }
  return by_server;
}

}  // namespace ember::ps
