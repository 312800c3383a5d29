// Tests for EveryServerCalls: a call to every server completes when each asked server answered,
// on the first error, at its deadline, or (for a server that left drained) without that server.
#include "ps/client/every_server_calls.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

namespace ember::ps {
namespace {

// Three servers; partitions 0-1 on server 0, 2-3 on server 1, 4-5 on server 2.
RoutingTable ThreeServers() {
  RoutingTable routing;
  routing.epoch = 3;
  routing.num_partitions = 6;
  for (uint32_t id = 0; id < 3; ++id) routing.servers.push_back({id, "tcp://127.0.0.1:1"});
  routing.owners = {0, 0, 1, 1, 2, 2};
  return routing;
}

struct Started {
  std::shared_ptr<EveryServerCalls::Call> call = std::make_shared<EveryServerCalls::Call>();
  std::vector<uint32_t> asked;        // servers sent to, in order
  std::vector<uint64_t> request_ids;  // their request ids
};

Started Start(EveryServerCalls& calls, const RoutingTable& routing, uint64_t& next_id,
              std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  Started started;
  started.call->what = "applying clock 7";
  started.call->timeout = Millis(timeout.count());
  started.call->deadline = EveryServerCalls::Clock::now() + timeout;
  started.call->encode = [](const wire::RequestHeader&) { return Frame(); };
  calls.Start(started.call, routing, next_id, [&](uint32_t server, Frame) {
    started.asked.push_back(server);
    started.request_ids.push_back(next_id - 1);
    return Status::Ok();
  });
  return started;
}

bool Answer(EveryServerCalls& calls, uint64_t request_id, Status status = Status::Ok()) {
  wire::DecodedResponse response;
  response.request_id = request_id;
  response.status = std::move(status);
  return calls.OnReply(request_id, response, [](uint32_t) { return std::string("tcp://x"); });
}

TEST(EveryServerCallsTest, CompletesOnceEveryOwnerAnswered) {
  EveryServerCalls calls;
  uint64_t next_id = 10;
  Started started = Start(calls, ThreeServers(), next_id);
  ASSERT_EQ(started.asked, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_TRUE(Answer(calls, started.request_ids[0]));
  EXPECT_TRUE(Answer(calls, started.request_ids[2]));
  EXPECT_FALSE(started.call->ticket.ready());
  EXPECT_TRUE(Answer(calls, started.request_ids[1]));
  ASSERT_TRUE(started.call->ticket.ready());
  EXPECT_TRUE(started.call->ticket.Wait().ok());
  EXPECT_FALSE(Answer(calls, started.request_ids[1]));  // no longer in flight
}

TEST(EveryServerCallsTest, AServerOwningNothingIsNotAsked) {
  EveryServerCalls calls;
  uint64_t next_id = 1;
  RoutingTable routing = ThreeServers();
  routing.owners = {1, 1, 1, 2, 2, 2};  // server 0 drained
  Started started = Start(calls, routing, next_id);
  EXPECT_EQ(started.asked, (std::vector<uint32_t>{1, 2}));
}

// A call sent on a routing table from before a drain asks the drained server, which exits
// without answering: once it is known to have left, the call completes without it instead of
// waiting out its deadline.
TEST(EveryServerCallsTest, ADrainedServerThatLeftIsNotWaitedFor) {
  EveryServerCalls calls;
  uint64_t next_id = 1;
  Started started = Start(calls, ThreeServers(), next_id);
  EXPECT_TRUE(Answer(calls, started.request_ids[1]));
  EXPECT_TRUE(Answer(calls, started.request_ids[2]));
  EXPECT_FALSE(started.call->ticket.ready());
  calls.OnServerLeft(0);
  ASSERT_TRUE(started.call->ticket.ready());
  EXPECT_TRUE(started.call->ticket.Wait().ok());
  EXPECT_FALSE(Answer(calls, started.request_ids[0]));  // a late answer is ignored
}

TEST(EveryServerCallsTest, AServerLeavingFirstStillWaitsForTheOthers) {
  EveryServerCalls calls;
  uint64_t next_id = 1;
  Started started = Start(calls, ThreeServers(), next_id);
  calls.OnServerLeft(0);
  calls.OnServerLeft(0);  // told twice: counted once
  EXPECT_FALSE(started.call->ticket.ready());
  EXPECT_TRUE(Answer(calls, started.request_ids[1]));
  EXPECT_FALSE(started.call->ticket.ready());
  EXPECT_TRUE(Answer(calls, started.request_ids[2]));
  ASSERT_TRUE(started.call->ticket.ready());
  EXPECT_TRUE(started.call->ticket.Wait().ok());
}

TEST(EveryServerCallsTest, AnErrorOrTheDeadlineEndsTheCallNamingIt) {
  EveryServerCalls calls;
  uint64_t next_id = 1;
  Started failed = Start(calls, ThreeServers(), next_id);
  EXPECT_TRUE(Answer(calls, failed.request_ids[1], Internal("disk full")));
  ASSERT_TRUE(failed.call->ticket.ready());
  EXPECT_NE(failed.call->ticket.Wait().message().find("applying clock 7"), std::string::npos);

  Started late = Start(calls, ThreeServers(), next_id, std::chrono::milliseconds(0));
  EXPECT_TRUE(Answer(calls, late.request_ids[0]));
  calls.ExpireDeadlines([](std::vector<uint32_t> servers) {
    return "servers " + std::to_string(servers.size());
  });
  ASSERT_TRUE(late.call->ticket.ready());
  const Status status = late.call->ticket.Wait();
  EXPECT_EQ(status.code(), StatusCode::kDeadlineExceeded) << status.ToString();
  EXPECT_NE(status.message().find("servers 2"), std::string::npos) << status.ToString();
}

}  // namespace
}  // namespace ember::ps
