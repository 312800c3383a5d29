// RoutingTable: which server owns each virtual partition, at which epoch.
//
// A key's partition is PartitionOf(table id, key, num_partitions) (common/hash.h); the table maps
// partitions to server ids. The scheduler owns the authoritative copy and bumps `epoch` on every
// change; servers and clients hold copies and compare epochs. Plain value type, not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/hash.h"

namespace ember {

struct ServerInfo {
  uint32_t id = 0;        // index into RoutingTable::servers
  std::string endpoint;   // ZeroMQ endpoint of the server's data socket
  std::string public_key;  // its CurveZMQ public key (Z85); empty when authentication is off
};

struct RoutingTable {
  uint64_t epoch = 0;                 // 0: not ready (servers still registering)
  uint32_t num_partitions = 0;        // fixed for the life of a cluster
  std::vector<ServerInfo> servers;    // servers[i].id == i
  std::vector<uint32_t> owners;       // owners[partition] = server id

  bool ready() const { return epoch > 0 && !servers.empty(); }
  uint32_t OwnerOfPartition(uint32_t partition) const { return owners[partition]; }
  uint32_t OwnerOf(uint64_t table_id, uint64_t key) const {
    return owners[PartitionOf(table_id, key, num_partitions)];
  }
  // Number of partitions owned by `server_id`.
  uint32_t PartitionsOwnedBy(uint32_t server_id) const;
};

// Assigns P partitions to `servers.size()` servers in contiguous, near-equal ranges
// (partition p -> floor(p * n / P)), so adding a server later moves few partitions.
RoutingTable MakeBalancedRouting(uint32_t num_partitions, std::vector<ServerInfo> servers,
                                 uint64_t epoch);

}  // namespace ember
