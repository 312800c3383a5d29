// Private to ps/client: an operation's keys divided among the servers that own them, the first
// step of sending it (client_io.cc's Dispatch).
//
// A push's share of each server is put in partition order, keeping the order of the keys within
// one partition: the server then updates each partition's rows from one run of gradients, which
// makes its push cheaper (docs/benchmarks.md). Keys of one partition keep their relative order, so
// duplicates of a key reach the server in the order they were given and every result is the same.
// Every other kind keeps its positions ascending, as a pull of several tables needs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/routing_table.h"
#include "ps/client/operation.h"

namespace ember::ps {

// For each server of `routing`, the positions among `op`'s keys that it owns: of `positions`, or
// of all of op's keys when `positions` is empty.
std::vector<std::vector<uint32_t>> SplitByServer(const Operation& op, const RoutingTable& routing,
                                                 std::span<const uint32_t> positions);

}  // namespace ember::ps
