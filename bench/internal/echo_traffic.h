// Echo traffic: the transport's own limit for the data-plane benchmark. Bare ZeroMQ echo peers in
// this process answer one operation as the servers would (one peer per server, no table behind
// them, replies of the size ember's would have), and a driver per client sends each request to all
// of them at once, split as a client splits a batch over servers. Private to bench/.
#pragma once

#include <sys/types.h>

#include <memory>
#include <vector>

#include "bench/bench_options.h"
#include "bench/internal/request_driver.h"
#include "common/status.h"
#include "ps/server/echo_peer.h"

namespace ember::bench {

enum class EchoOperation { kPull, kPush };

struct EchoTraffic {
  std::vector<std::unique_ptr<ps::EchoPeer>> peers;
  std::vector<pid_t> peer_thread_ids;  // the peers' threads, ZeroMQ's I/O threads included
  std::vector<std::unique_ptr<RequestDriver>> drivers;  // declared last: closed before the peers
};

// Starts options.servers echo peers for `operation` and options.clients drivers connected to
// them all.
Result<EchoTraffic> StartEchoTraffic(const BenchOptions& options, EchoOperation operation);

}  // namespace ember::bench
