// The scheduler's state across its restart: the file's encoding (round trip, damage refused
// with DataLoss, never a crash), and a scheduler started again on its data directory that binds
// the same endpoint and knows the servers, the routing table, drains, trainers and their clocks,
// answers a commit sent again as done, and refuses the directory of another job.
#include <gtest/gtest.h>

#include <thread>

#include "common/checksummed_file.h"
#include "common/rpc_channel.h"
#include "common/transport.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_state.h"
#include "tests/test_util.h"

namespace ember::scheduler {
namespace {

SchedulerState FullState() {
  SchedulerState state;
  state.endpoint = "tcp://127.0.0.1:4000";
  state.num_partitions = 4;
  state.tables_fingerprint = 77;
  state.servers = {{0, "tcp://127.0.0.1:1", "key0"}, {1, "tcp://127.0.0.1:2", ""}};
  state.epoch = 9;
  state.owners = {0, 0, 1, 1};
  state.moves.states = {ServerState::kLive, ServerState::kDraining};
  state.moves.in_flight = {PartitionMove{2, 1, 0}};
  state.moves.done = 5;
  state.trainers = {{"a", 0, "ka"}, {"b", 1, ""}};
  state.clocks.members = {{0, "a", TrainerClocks::State::kLive, 1, 17, true},
                          {1, "b", TrainerClocks::State::kLeft, 3, 12, true}};
  state.clocks.joined = 2;
  state.clocks.highest_clock = 17;
  state.cuts.requested = wire::CutInfo{20, "/ckpt/x", 0, false, 1, ""};
  state.cuts.active = wire::CutInfo{18, "/ckpt/step-18", 3, false, 0, "/ckpt/step-10"};
  state.cuts.coordinating = true;
  state.cuts.arrived = {0};
  state.cut_coordinator = 0;
  state.cuts_completed = 2;
  state.cuts_failed = 1;
  state.last_cut_clock = 10;
  state.last_cut_error = "ABORTED: disk full";
  return state;
}

TEST(SchedulerStateTest, RoundTripsEveryField) {
  const std::string payload = EncodeSchedulerState(FullState());
  auto decoded = DecodeSchedulerState(payload);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(EncodeSchedulerState(*decoded), payload);
  EXPECT_EQ(decoded->servers[0].public_key, "key0");
  EXPECT_EQ(decoded->moves.in_flight.at(0).partition, 2u);
  EXPECT_EQ(decoded->clocks.members.at(0).clock, 17u);
  EXPECT_EQ(decoded->cuts.active->after, "/ckpt/step-10");
  EXPECT_EQ(decoded->last_cut_error, "ABORTED: disk full");
  // Without clocks, only the clocks differ.
  SchedulerState without = FullState();
  without.clocks.members[0].clock = without.clocks.members[1].clock = 0;
  without.clocks.highest_clock = 0;
  EXPECT_EQ(EncodeSchedulerState(FullState(), false), EncodeSchedulerState(without));
}

TEST(SchedulerStateTest, DamageIsDataLossNamingWhatIsWrong) {
  const std::string payload = EncodeSchedulerState(FullState());
  for (size_t length = 0; length < payload.size(); ++length) {
    auto decoded = DecodeSchedulerState(payload.substr(0, length));
    ASSERT_EQ(decoded.status().code(), StatusCode::kDataLoss) << "length " << length;
  }
  EXPECT_NE(DecodeSchedulerState(payload + "x").status().message().find("1 bytes after the end"),
            std::string_view::npos);
  SchedulerState bad_owner = FullState();
  bad_owner.owners[3] = 7;
  EXPECT_NE(DecodeSchedulerState(EncodeSchedulerState(bad_owner))
                .status()
                .message()
                .find("partition owner 7 is no server"),
            std::string_view::npos);
  SchedulerState bad_move = FullState();
  bad_move.moves.in_flight.push_back(PartitionMove{2, 0, 1});  // the same partition twice
  EXPECT_EQ(DecodeSchedulerState(EncodeSchedulerState(bad_move)).status().code(),
            StatusCode::kDataLoss);
  SchedulerState bad_clock = FullState();
  bad_clock.clocks.members[1].id = 5;
  EXPECT_EQ(DecodeSchedulerState(EncodeSchedulerState(bad_clock)).status().code(),
            StatusCode::kDataLoss);
}

TEST(SchedulerStateTest, AFileWithAFlippedByteIsRefused) {
  testing::TempDir dir;
  ASSERT_TRUE(SaveSchedulerState(dir.path(), EncodeSchedulerState(FullState()), Flush::kNow).ok());
  auto loaded = LoadSchedulerState(dir.path());
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  std::string bytes = testing::ReadFile(SchedulerStatePath(dir.path()));
  bytes[bytes.size() / 2] ^= 1;
  ASSERT_TRUE(WriteFileAtomically(SchedulerStatePath(dir.path()), bytes).ok());
  EXPECT_EQ(LoadSchedulerState(dir.path()).status().code(), StatusCode::kDataLoss);
  testing::TempDir empty;
  auto none = LoadSchedulerState(empty.path());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

// A scheduler on a data directory, run on a thread until stopped.
class RunningScheduler {
 public:
  RunningScheduler(const std::string& dir, uint32_t partitions, SyncMode mode) {
    SchedulerOptions options;
    options.num_servers = 2;
    options.num_partitions = partitions;
    options.sync.mode = mode;
    options.data_dir = dir;
    TableSpec spec;
    spec.name = "t";
    spec.dim = 2;
    options.tables.push_back(spec);
    scheduler_ = std::make_unique<Scheduler>(options);
    started_ = scheduler_->Start();
    if (started_.ok()) thread_ = std::thread([this] { scheduler_->Run(); });
  }
  ~RunningScheduler() {
    scheduler_->RequestStop();
    if (thread_.joinable()) thread_.join();
  }
  const Status& started() const { return started_; }
  const std::string& endpoint() const { return scheduler_->endpoint(); }

 private:
  std::unique_ptr<Scheduler> scheduler_;
  Status started_;
  std::thread thread_;
};

template <typename Body>
Body Answer(RpcChannel& channel, Frame request, uint64_t id) {
  auto reply = channel.Call(id, std::move(request), Millis(5000));
  EXPECT_TRUE(reply.ok()) << reply.status().ToString();
  if (!reply.ok()) return Body{};
  EXPECT_TRUE(reply->status.ok()) << reply->status.ToString();
  auto* body = std::get_if<Body>(&reply->body);
  return body ? *body : Body{};
}

// Servers 0 (on `a`) and 1 (on `b`) register: the cluster forms.
void FormCluster(RpcChannel& a, RpcChannel& b) {
  std::thread server_a([&] {
    Answer<wire::Registration>(a, wire::EncodeRegisterServer({1, 0}, "tcp://127.0.0.1:1"), 1);
  });
  Answer<wire::Registration>(b, wire::EncodeRegisterServer({1, 0}, "tcp://127.0.0.1:2"), 1);
  server_a.join();
}

TEST(SchedulerRestartTest, StartedAgainOnItsDirectoryItGoesOnWhereItStopped) {
  testing::TempDir dir;
  Context context;
  std::string endpoint;
  {
    RunningScheduler first(dir.path(), 8, SyncMode::kAsp);
    ASSERT_TRUE(first.started().ok()) << first.started().ToString();
    endpoint = first.endpoint();
    RpcChannel a(context, endpoint), b(context, endpoint), trainer(context, endpoint);
    FormCluster(a, b);
    auto registered = Answer<wire::Registration>(trainer, wire::EncodeRegisterTrainer({1, 0}, "t0"), 1);
    EXPECT_EQ(registered.id, 0u);
    Answer<wire::ClockGrant>(trainer, wire::EncodeTrainerClock({2, 0}, {0, 6, false}), 2);
    auto drained = b.Call(2, wire::EncodeDrain({2, 0}, 1), Millis(5000));
    ASSERT_TRUE(drained.ok() && drained->status.ok());
    // The source hears of the moves, then the target gets the first ones.
    Answer<wire::ServerOrders>(b, wire::EncodeServerHeartbeat({3, 0}, 1), 3);
    auto orders = Answer<wire::ServerOrders>(a, wire::EncodeServerHeartbeat({3, 0}, 0), 3);
    ASSERT_FALSE(orders.moves.empty());
    const wire::MoveOrder move = orders.moves.front();
    Answer<RoutingTable>(a, wire::EncodeMoveDecision({4, 0}, {move, true, ""}), 4);
  }
  RunningScheduler second(dir.path(), 8, SyncMode::kAsp);
  ASSERT_TRUE(second.started().ok()) << second.started().ToString();
  EXPECT_EQ(second.endpoint(), endpoint);  // the wildcard port bound as before
  RpcChannel channel(context, endpoint);
  auto status = Answer<wire::ClusterStatus>(channel, wire::EncodeClusterStatusRequest({1, 0}), 1);
  ASSERT_EQ(status.servers.size(), 2u);
  EXPECT_EQ(status.servers[1].state, "draining");
  EXPECT_EQ(status.routing.epoch, 2u);  // formed at 1, one commit
  EXPECT_EQ(status.moves_done, 1u);
  EXPECT_EQ(status.servers[0].partitions, 5u);
  // The trainer's name still has its id and its clock; a clock report goes on from it.
  auto again = Answer<wire::Registration>(channel, wire::EncodeRegisterTrainer({2, 0}, "t0"), 2);
  EXPECT_EQ(again.id, 0u);
  EXPECT_EQ(again.clock, 6u);
  auto backwards = channel.Call(3, wire::EncodeTrainerClock({3, 0}, {0, 5, false}), Millis(5000));
  ASSERT_TRUE(backwards.ok());
  EXPECT_EQ(backwards->status.code(), StatusCode::kInvalidArgument);
}

TEST(SchedulerRestartTest, ACommitSentAgainIsAnsweredAsDone) {
  testing::TempDir dir;
  Context context;
  RunningScheduler scheduler(dir.path(), 8, SyncMode::kAsp);
  ASSERT_TRUE(scheduler.started().ok());
  RpcChannel a(context, scheduler.endpoint()), b(context, scheduler.endpoint());
  FormCluster(a, b);
  ASSERT_TRUE(b.Call(2, wire::EncodeDrain({2, 0}, 1), Millis(5000)).ok());
  auto orders = Answer<wire::ServerOrders>(b, wire::EncodeServerHeartbeat({3, 0}, 1), 3);
  orders = Answer<wire::ServerOrders>(a, wire::EncodeServerHeartbeat({3, 0}, 0), 3);
  ASSERT_FALSE(orders.moves.empty());
  const wire::MoveOrder move = orders.moves.front();
  auto first = Answer<RoutingTable>(a, wire::EncodeMoveDecision({4, 0}, {move, true, ""}), 4);
  auto second = Answer<RoutingTable>(a, wire::EncodeMoveDecision({5, 0}, {move, true, ""}), 5);
  EXPECT_EQ(first.epoch, second.epoch);  // not committed twice
  EXPECT_EQ(second.owners.at(move.partition), 0u);
}

TEST(SchedulerRestartTest, TheDirectoryOfAnotherJobIsRefused) {
  testing::TempDir dir;
  {
    RunningScheduler first(dir.path(), 8, SyncMode::kAsp);
    ASSERT_TRUE(first.started().ok());
  }
  RunningScheduler other(dir.path(), 16, SyncMode::kAsp);
  EXPECT_EQ(other.started().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(other.started().message().find("other partitions or tables"), std::string_view::npos);
}

TEST(SchedulerRestartTest, AClockReportSentAgainReplacesTheFirst) {
  testing::TempDir dir;
  Context context;
  RunningScheduler scheduler(dir.path(), 8, SyncMode::kBsp);
  ASSERT_TRUE(scheduler.started().ok());
  RpcChannel a(context, scheduler.endpoint()), b(context, scheduler.endpoint());
  RpcChannel trainer(context, scheduler.endpoint());
  FormCluster(a, b);
  Answer<wire::Registration>(trainer, wire::EncodeRegisterTrainer({1, 0}, "t0"), 1);
  // One trainer in bsp: every report is granted at once, a report sent again too.
  auto grant = Answer<wire::ClockGrant>(trainer, wire::EncodeTrainerClock({2, 0}, {0, 1, false}), 2);
  EXPECT_EQ(grant.clock, 1u);
  auto resent = Answer<wire::ClockGrant>(trainer, wire::EncodeTrainerClock({3, 0}, {0, 1, false}), 3);
  EXPECT_EQ(resent.clock, 1u);
  EXPECT_EQ(resent.trainers, grant.trainers);
  // A leave sent again is answered as done.
  auto left = trainer.Call(4, wire::EncodeTrainerClock({4, 0}, {0, 2, true}), Millis(5000));
  ASSERT_TRUE(left.ok() && left->status.ok());
  auto left_again = trainer.Call(5, wire::EncodeTrainerClock({5, 0}, {0, 2, true}), Millis(5000));
  ASSERT_TRUE(left_again.ok());
  EXPECT_TRUE(left_again->status.ok()) << left_again->status.ToString();
}

TEST(SchedulerRestartTest, StaleClocksHoldBackNewcomersAndCutRequestsUntilReportedAgain) {
  testing::TempDir dir;
  Context context;
  std::string endpoint;
  {
    RunningScheduler first(dir.path(), 8, SyncMode::kAsp);
    ASSERT_TRUE(first.started().ok());
    RpcChannel a(context, first.endpoint()), b(context, first.endpoint());
    FormCluster(a, b);
    RpcChannel trainer(context, first.endpoint());
    Answer<wire::Registration>(trainer, wire::EncodeRegisterTrainer({1, 0}, "t0"), 1);
    // The first report is saved (the trainer now counts as training); a later clock alone is
    // not: the restart finds clock 3.
    Answer<wire::ClockGrant>(trainer, wire::EncodeTrainerClock({2, 0}, {0, 3, false}), 2);
    Answer<wire::ClockGrant>(trainer, wire::EncodeTrainerClock({3, 0}, {0, 5, false}), 3);
  }
  RunningScheduler second(dir.path(), 8, SyncMode::kAsp);
  ASSERT_TRUE(second.started().ok());
  RpcChannel trainer(context, second.endpoint()), newcomer(context, second.endpoint());
  auto early = newcomer.Call(1, wire::EncodeRegisterTrainer({1, 0}, "t1"), Millis(5000));
  ASSERT_TRUE(early.ok());
  EXPECT_EQ(early->status.code(), StatusCode::kUnavailable) << early->status.ToString();
  auto cut = newcomer.Call(2, wire::EncodeCheckpointNow({2, 0}, {{"/tmp/x", "", false}}),
                           Millis(5000));
  ASSERT_TRUE(cut.ok());
  EXPECT_EQ(cut->status.code(), StatusCode::kUnavailable) << cut->status.ToString();
  // The known trainer registers again (its stale clock) and reports its true clock: fresh again.
  auto again = Answer<wire::Registration>(trainer, wire::EncodeRegisterTrainer({1, 0}, "t0"), 1);
  EXPECT_EQ(again.clock, 3u);
  Answer<wire::ClockGrant>(trainer, wire::EncodeTrainerClock({2, 0}, {0, 6, false}), 2);
  auto joined = Answer<wire::Registration>(newcomer, wire::EncodeRegisterTrainer({3, 0}, "t1"), 3);
  EXPECT_EQ(joined.id, 1u);
}

}  // namespace
}  // namespace ember::scheduler
