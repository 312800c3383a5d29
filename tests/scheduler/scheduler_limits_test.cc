// The scheduler's limits, each driven over a small configured value: tables in the config,
// registered trainers, open barriers, barrier name length, and waiting requests (barrier arrivals
// and clock reports). Each refusal names the limit and its config key, is counted in the cluster
// status, changes nothing, and the scheduler answers the next request.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "common/rpc_channel.h"
#include "common/transport.h"
#include "scheduler/scheduler.h"

namespace ember::scheduler {
namespace {

constexpr Millis kReply{5000};
constexpr Millis kNoReply{200};  // a request that waits is not answered within this

SchedulerOptions Options(const Limits& limits, SyncOptions sync = {}) {
  SchedulerOptions options;
  options.num_servers = 1;
  options.num_partitions = 4;
  TableSpec spec;
  spec.name = "t";
  spec.dim = 2;
  options.tables.push_back(spec);
  options.limits = limits;
  options.sync = sync;
  return options;
}

void ExpectRefusedFor(const Status& status, const std::string& key, uint64_t value) {
  EXPECT_EQ(status.code(), StatusCode::kResourceExhausted) << status.ToString();
  EXPECT_NE(status.message().find("limits." + key), std::string::npos) << status.ToString();
  EXPECT_NE(status.message().find("limit of " + std::to_string(value)), std::string::npos)
      << status.ToString();
}

// A running scheduler whose one server has registered (the cluster is formed).
class LimitedScheduler {
 public:
  explicit LimitedScheduler(SchedulerOptions options) : scheduler_(std::move(options)) {
    started_ = scheduler_.Start();
    if (!started_.ok()) return;
    thread_ = std::thread([this] { scheduler_.Run(); });
    RpcChannel server(context_, scheduler_.endpoint());
    auto registered = server.Call(1, wire::EncodeRegisterServer({1, 0}, "tcp://127.0.0.1:9"),
                                  kReply);
    if (!registered.ok()) started_ = registered.status();
  }
  ~LimitedScheduler() {
    scheduler_.RequestStop();
    if (thread_.joinable()) thread_.join();
  }

  const Status& started() const { return started_; }
  // A new connection (its own identity) to the scheduler.
  std::unique_ptr<RpcChannel> Connect() {
    return std::make_unique<RpcChannel>(context_, scheduler_.endpoint());
  }
  // The answer's status, or the call's error (DeadlineExceeded for a request left waiting).
  static Status Ask(RpcChannel& channel, Frame request, Millis timeout = kReply) {
    auto reply = channel.Call(++request_id_, std::move(request), timeout);
    return reply.ok() ? reply->status : reply.status();
  }
  static wire::RequestHeader Header() { return {request_id_ + 1, 0}; }
  uint64_t Hits(Limit limit) {
    auto channel = Connect();
    Frame request = wire::EncodeClusterStatusRequest(Header());
    auto reply = channel->Call(++request_id_, std::move(request), kReply);
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    if (!reply.ok()) return 0;
    auto* status = std::get_if<wire::ClusterStatus>(&reply->body);
    return status == nullptr ? 0 : HitsOf(status->limits_hit, limit);
  }
  bool Serves() {
    auto channel = Connect();
    return Ask(*channel, wire::EncodePing(Header())).ok();
  }

 private:
  static inline uint64_t request_id_ = 100;
  Context context_;
  Scheduler scheduler_;
  std::thread thread_;
  Status started_;
};

Frame Register(const std::string& name) {
  return wire::EncodeRegisterTrainer(LimitedScheduler::Header(), name);
}
Frame Barrier(const std::string& name, uint32_t count) {
  return wire::EncodeBarrier(LimitedScheduler::Header(), name, count);
}

TEST(SchedulerLimitsTest, AConfigWithTooManyTablesIsRefusedAtStart) {
  Limits limits;
  limits.tables_per_server = 1;
  SchedulerOptions options = Options(limits);
  options.tables.push_back(options.tables.front());
  options.tables.back().name = "u";
  Scheduler scheduler(options);
  const Status started = scheduler.Start();
  ExpectRefusedFor(started, "tables_per_server", 1);
  EXPECT_NE(started.message().find("2 tables"), std::string::npos) << started.ToString();
}

TEST(SchedulerLimitsTest, TrainersBeyondTheLimitAreRefusedAndKnownNamesStillRegister) {
  Limits limits;
  limits.trainers = 2;
  LimitedScheduler scheduler(Options(limits));
  ASSERT_TRUE(scheduler.started().ok()) << scheduler.started().ToString();
  auto channel = scheduler.Connect();
  ASSERT_TRUE(LimitedScheduler::Ask(*channel, Register("a")).ok());
  ASSERT_TRUE(LimitedScheduler::Ask(*channel, Register("b")).ok());
  const Status third = LimitedScheduler::Ask(*channel, Register("c"));
  ExpectRefusedFor(third, "trainers", 2);
  EXPECT_NE(third.message().find("'c'"), std::string::npos) << third.ToString();
  EXPECT_EQ(scheduler.Hits(Limit::kTrainers), 1u);
  // A known name registers again (a restarted trainer), and "c" still is not registered.
  EXPECT_TRUE(LimitedScheduler::Ask(*channel, Register("a")).ok());
  ExpectRefusedFor(LimitedScheduler::Ask(*channel, Register("c")), "trainers", 2);
  EXPECT_EQ(scheduler.Hits(Limit::kTrainers), 2u);
  EXPECT_TRUE(scheduler.Serves());
}

TEST(SchedulerLimitsTest, ATrainerSlotFreesWhenItsTrainerFallsSilent) {
  Limits limits;
  limits.trainers = 2;
  SyncOptions sync;
  sync.trainer_timeout = Millis(300);
  LimitedScheduler scheduler(Options(limits, sync));
  ASSERT_TRUE(scheduler.started().ok()) << scheduler.started().ToString();
  auto channel = scheduler.Connect();
  ASSERT_TRUE(LimitedScheduler::Ask(*channel, Register("a")).ok());
  ASSERT_TRUE(LimitedScheduler::Ask(*channel, Register("b")).ok());
  const Status full = LimitedScheduler::Ask(*channel, Register("c"));
  ExpectRefusedFor(full, "trainers", 2);
  EXPECT_NE(full.message().find("silent for 300 ms"), std::string::npos) << full.ToString();
  // "a" and "b" never heartbeat: once they are dead, "c" takes a slot (bounded wait).
  Status registered = full;
  for (int attempt = 0; attempt < 50 && !registered.ok(); ++attempt) {
    std::this_thread::sleep_for(Millis(100));
    registered = LimitedScheduler::Ask(*channel, Register("c"));
  }
  EXPECT_TRUE(registered.ok()) << registered.ToString();
}

TEST(SchedulerLimitsTest, ABarriersCountIsFixedByItsFirstArrivalAndBoundedByTheTrainers) {
  Limits limits;
  limits.trainers = 4;
  LimitedScheduler scheduler(Options(limits));
  ASSERT_TRUE(scheduler.started().ok()) << scheduler.started().ToString();
  auto first = scheduler.Connect(), second = scheduler.Connect();
  EXPECT_EQ(LimitedScheduler::Ask(*second, Barrier("x", 0)).code(), StatusCode::kInvalidArgument);
  for (uint32_t count : {5u, ~0u}) {
    const Status refused = LimitedScheduler::Ask(*second, Barrier("x", count));
    EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.ToString();
    EXPECT_NE(refused.message().find("1 to 4 (limits.trainers)"), std::string::npos)
        << refused.ToString();
  }
  EXPECT_EQ(LimitedScheduler::Ask(*first, Barrier("x", 2), kNoReply).code(),
            StatusCode::kDeadlineExceeded);  // waits for one more
  // A second participant cannot release the first alone by naming a count of 1.
  const Status shrunk = LimitedScheduler::Ask(*second, Barrier("x", 1));
  EXPECT_EQ(shrunk.code(), StatusCode::kInvalidArgument) << shrunk.ToString();
  EXPECT_NE(shrunk.message().find("opened for 2"), std::string::npos) << shrunk.ToString();
  EXPECT_TRUE(LimitedScheduler::Ask(*second, Barrier("x", 2)).ok());
}

TEST(SchedulerLimitsTest, ABarrierArrivalExpiresAfterTheClockTimeoutAndFreesItsRoom) {
  Limits limits;
  limits.open_barriers = 1;
  SyncOptions sync;
  sync.clock_timeout = Millis(300);
  LimitedScheduler scheduler(Options(limits, sync));
  ASSERT_TRUE(scheduler.started().ok()) << scheduler.started().ToString();
  auto gone = scheduler.Connect(), other = scheduler.Connect();
  // A participant that never gets its peers: answered DeadlineExceeded by the scheduler.
  const Status expired = LimitedScheduler::Ask(*gone, Barrier("x", 2));
  EXPECT_EQ(expired.code(), StatusCode::kDeadlineExceeded) << expired.ToString();
  EXPECT_NE(expired.message().find("expired"), std::string::npos) << expired.ToString();
  // The barrier closed with it: another may open.
  EXPECT_EQ(LimitedScheduler::Ask(*other, Barrier("y", 2), kNoReply).code(),
            StatusCode::kDeadlineExceeded);
  ExpectRefusedFor(LimitedScheduler::Ask(*gone, Barrier("z", 1)), "open_barriers", 1);
}

TEST(SchedulerLimitsTest, BarriersBeyondTheLimitAndLongNamesAreRefused) {
  Limits limits;
  limits.open_barriers = 1;
  limits.barrier_name_bytes = 8;
  LimitedScheduler scheduler(Options(limits));
  ASSERT_TRUE(scheduler.started().ok()) << scheduler.started().ToString();
  auto first = scheduler.Connect(), second = scheduler.Connect();
  // "x" stays open (it waits for a second arrival).
  EXPECT_EQ(LimitedScheduler::Ask(*first, Barrier("x", 2), kNoReply).code(),
            StatusCode::kDeadlineExceeded);
  ExpectRefusedFor(LimitedScheduler::Ask(*second, Barrier("y", 1)), "open_barriers", 1);
  EXPECT_EQ(scheduler.Hits(Limit::kOpenBarriers), 1u);
  ExpectRefusedFor(LimitedScheduler::Ask(*second, Barrier("much-too-long", 2)),
                   "barrier_name_bytes", 8);
  EXPECT_EQ(scheduler.Hits(Limit::kBarrierNameBytes), 1u);
  // The open barrier was left as it was: the second arrival releases it.
  EXPECT_TRUE(LimitedScheduler::Ask(*second, Barrier("x", 2)).ok());
  // Closed, it no longer counts: a new barrier opens.
  EXPECT_TRUE(LimitedScheduler::Ask(*second, Barrier("y", 1)).ok());
  EXPECT_TRUE(scheduler.Serves());
}

TEST(SchedulerLimitsTest, BarrierArrivalsBeyondTheWaitersLimitAreRefused) {
  Limits limits;
  limits.waiters = 2;
  LimitedScheduler scheduler(Options(limits));
  ASSERT_TRUE(scheduler.started().ok()) << scheduler.started().ToString();
  auto a = scheduler.Connect(), b = scheduler.Connect(), c = scheduler.Connect();
  EXPECT_EQ(LimitedScheduler::Ask(*a, Barrier("x", 3), kNoReply).code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_EQ(LimitedScheduler::Ask(*b, Barrier("x", 3), kNoReply).code(),
            StatusCode::kDeadlineExceeded);
  const Status refused = LimitedScheduler::Ask(*c, Barrier("x", 3));
  ExpectRefusedFor(refused, "waiters", 2);
  EXPECT_EQ(scheduler.Hits(Limit::kWaiters), 1u);
  // The refused arrival did not count: a resent arrival of a waiting peer (no new waiter) is
  // taken and still waits for the third.
  EXPECT_EQ(LimitedScheduler::Ask(*a, Barrier("x", 3), kNoReply).code(),
            StatusCode::kDeadlineExceeded);
  EXPECT_EQ(scheduler.Hits(Limit::kWaiters), 1u);
  EXPECT_TRUE(scheduler.Serves());
}

TEST(SchedulerLimitsTest, ClockReportsBeyondTheWaitersLimitAreRefusedUnrecorded) {
  Limits limits;
  limits.waiters = 1;
  SyncOptions sync;
  sync.mode = SyncMode::kBsp;
  sync.trainers = 2;
  sync.trainer_timeout = std::chrono::milliseconds(60'000);
  LimitedScheduler scheduler(Options(limits, sync));
  ASSERT_TRUE(scheduler.started().ok()) << scheduler.started().ToString();
  auto a = scheduler.Connect(), b = scheduler.Connect();
  ASSERT_TRUE(LimitedScheduler::Ask(*a, Register("a")).ok());
  ASSERT_TRUE(LimitedScheduler::Ask(*b, Register("b")).ok());
  // Trainer 0's clock 1 waits for trainer 1's; trainer 1's report finds the waiters full.
  EXPECT_EQ(LimitedScheduler::Ask(*a, wire::EncodeTrainerClock(LimitedScheduler::Header(),
                                                               {0, 1, false}),
                                  kNoReply)
                .code(),
            StatusCode::kDeadlineExceeded);
  const Status refused = LimitedScheduler::Ask(
      *b, wire::EncodeTrainerClock(LimitedScheduler::Header(), {1, 1, false}));
  ExpectRefusedFor(refused, "waiters", 1);
  EXPECT_EQ(scheduler.Hits(Limit::kWaiters), 1u);
  // Unrecorded: trainer 1 leaving at clock 0 is no step back (a recorded clock 1 would be).
  EXPECT_TRUE(LimitedScheduler::Ask(
                  *b, wire::EncodeTrainerClock(LimitedScheduler::Header(), {1, 0, true}))
                  .ok());
  EXPECT_TRUE(scheduler.Serves());
}

}  // namespace
}  // namespace ember::scheduler
