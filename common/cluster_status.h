// ClusterStatus: the scheduler's view of the cluster (routing, each server's state, moves), as
// `ember status` and `ember drain` show it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/limits.h"
#include "common/routing_table.h"

namespace ember {

struct ServerStatus {
  uint32_t id = 0;
  std::string endpoint;
  std::string state;  // live, draining, drained, dead
  uint32_t partitions = 0;
};

struct ClusterStatus {
  RoutingTable routing;
  std::vector<ServerStatus> servers;
  uint32_t moves_in_flight = 0;
  uint32_t moves_planned = 0;
  uint64_t moves_done = 0;
  std::vector<LimitHit> limits_hit;  // the limits the scheduler refused something for
};

}  // namespace ember
