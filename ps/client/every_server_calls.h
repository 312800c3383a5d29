// EveryServerCalls: the calls a client makes to every server at once (apply a clock, checkpoints,
// stats), as its I/O thread runs them: one request to each server of the routing table that owns
// a partition (one that owns none has nothing to give, and a drained one has exited), and the
// call completes when every server answered, on the first error, or at its deadline. These
// requests are never sent again after a reconnection.
//
// Thread-safety: the I/O thread alone calls it; a call's ticket is what its caller waits on.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/millis.h"
#include "common/routing_table.h"
#include "common/status.h"
#include "common/wire.h"
#include "ps/client/ticket.h"

namespace ember::ps {

class EveryServerCalls {
 public:
  using Clock = std::chrono::steady_clock;
  struct Call {
    std::function<Frame(const wire::RequestHeader&)> encode;
    std::string what;  // names the call in errors: "applying clock 7"
    Millis timeout{0};
    Clock::time_point deadline;
    // By server id: each server's answer (plain values only: no span into a freed frame).
    std::vector<wire::ResponseBody> bodies;
    uint32_t outstanding = 0;
    bool finished = false;
    Ticket ticket = Ticket::Pending();
  };
  // Sends `frame` to server `server`: an error when it cannot be sent.
  using Send = std::function<Status(uint32_t server, Frame frame)>;
  // Names a server in errors: "tcp://host:port".
  using EndpointOf = std::function<std::string(uint32_t server)>;
  // "server 1 (...)" or "servers 0 (...), 2 (...)": the servers that did not answer in time.
  using NameServers = std::function<std::string(std::vector<uint32_t> servers)>;

  // Sends `call` to every server of `routing`, taking request ids from `next_request_id`.
  void Start(const std::shared_ptr<Call>& call, const RoutingTable& routing,
             uint64_t& next_request_id, const Send& send);
  // The reply to request `request_id`: false when it is not one of these calls' requests.
  bool OnReply(uint64_t request_id, wire::DecodedResponse& response, const EndpointOf& endpoint);
  // Server `server` left holding no partition (drained): it is not coming back to answer, and a
  // call started now would not ask it (Start), so its part of every call is done.
  void OnServerLeft(uint32_t server);
  // Completes the calls past their deadline, naming the servers that did not answer.
  void ExpireDeadlines(const NameServers& name_servers);
  // Completes every call still running with `status` (the client closes).
  void AbortAll(const Status& status);

 private:
  struct InFlight {
    std::shared_ptr<Call> call;
    uint32_t server = 0;
  };
  // Completes `call` with `status` (also OK) and forgets its requests still in flight.
  void Finish(const std::shared_ptr<Call>& call, Status status);

  std::map<uint64_t, InFlight> in_flight_;  // by request id
  std::vector<std::shared_ptr<Call>> active_;
};

}  // namespace ember::ps
