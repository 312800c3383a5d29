// Rebalancing plans: which partitions move where when servers join, drain or leave.
//
// Given the current owner of every partition and the servers that should hold partitions from now
// on, PlanRebalance gives every one of them a fair share (P / n partitions, the remainder one
// each to the servers already holding the most) and moves as few partitions as that allows: only
// partitions of servers above their share, or of servers that hold none from now on, move, each
// to a server below its share. A server keeps the partitions it can keep, and a server above its
// share gives up its highest-numbered ones, so contiguous ranges stay mostly contiguous.
// Deterministic for the same input. Pure function; reentrant.
#pragma once

#include <cstdint>
#include <vector>

namespace ember::scheduler {

struct PartitionMove {
  uint32_t partition = 0;
  uint32_t from = 0;  // server id
  uint32_t to = 0;    // server id
};

// `owners[p]` is partition p's server; `targets` are the servers that should hold partitions
// (non-empty, distinct). Servers in `owners` that are not targets lose all their partitions.
std::vector<PartitionMove> PlanRebalance(const std::vector<uint32_t>& owners,
                                         const std::vector<uint32_t>& targets);

}  // namespace ember::scheduler
