// SchedulerClient against a running scheduler: typed answers, errors that name the call and keep
// the scheduler's code, and calls at once from several threads on one client.
#include "ps/client/scheduler_client.h"

#include <gtest/gtest.h>

#include <future>

#include "local/local_cluster.h"

namespace ember {
namespace {

std::vector<TableSpec> OneTable() {
  TableSpec spec;
  spec.name = "rows";
  spec.dim = 4;
  spec.seed = 1;
  return {spec};
}

class SchedulerClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(cluster_.status().ok()) << cluster_.status().ToString(); }

  local::LocalCluster cluster_{OneTable(), {.num_servers = 2}};
  ps::SchedulerClient scheduler_{cluster_.scheduler_endpoint()};
};

TEST_F(SchedulerClientTest, RegistrationGivesTheTablesAndAReadyRouting) {
  auto registration = scheduler_.RegisterTrainer("t", Millis(5000));
  ASSERT_TRUE(registration.ok()) << registration.status().ToString();
  ASSERT_EQ(registration->tables.size(), 1u);
  EXPECT_EQ(registration->tables[0].name, "rows");
  EXPECT_TRUE(registration->routing.ready());
  // The same name gets the same id again.
  auto again = scheduler_.RegisterTrainer("t", Millis(5000));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->trainer_id, registration->trainer_id);
}

TEST_F(SchedulerClientTest, RoutingAndClusterStatusDescribeTheServers) {
  auto routing = scheduler_.GetRouting(Millis(5000));
  ASSERT_TRUE(routing.ok()) << routing.status().ToString();
  EXPECT_EQ(routing->servers.size(), 2u);
  auto status = scheduler_.GetClusterStatus(Millis(5000));
  ASSERT_TRUE(status.ok()) << status.status().ToString();
  ASSERT_EQ(status->servers.size(), 2u);
  EXPECT_EQ(status->servers[0].state, "live");
  EXPECT_EQ(status->routing.epoch, routing->epoch);
}

TEST_F(SchedulerClientTest, RefusedCallKeepsTheSchedulersCodeAndNamesTheCall) {
  Status refused = scheduler_.Barrier("empty", 0, Millis(5000));
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.ToString();
  EXPECT_NE(refused.message().find("barrier 'empty'"), std::string::npos) << refused.ToString();
  Status unknown = scheduler_.Drain(9, Millis(5000));
  EXPECT_FALSE(unknown.ok());
  EXPECT_NE(unknown.message().find("draining server 9"), std::string::npos) << unknown.ToString();
}

TEST_F(SchedulerClientTest, CallsAtOnceFromOneClientEachHaveAConnection) {
  // The scheduler counts a barrier's arrivals by connection: two threads of one client meet
  // there only if each call has a connection of its own.
  auto other =
      std::async(std::launch::async, [&] { return scheduler_.Barrier("both", 2, Millis(10'000)); });
  EXPECT_TRUE(scheduler_.Barrier("both", 2, Millis(10'000)).ok());
  EXPECT_TRUE(other.get().ok());
}

TEST(SchedulerClientDownTest, UnreachableSchedulerFailsAtTheDeadlineNamingTheCall) {
  // A port nothing listens on (the cluster that used it is gone).
  std::string endpoint;
  {
    local::LocalCluster cluster(OneTable(), {.num_servers = 1});
    ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
    endpoint = cluster.scheduler_endpoint();
  }
  ps::SchedulerClient scheduler(endpoint);
  Status silent = scheduler.Heartbeat(3, Millis(200));
  EXPECT_EQ(silent.code(), StatusCode::kDeadlineExceeded) << silent.ToString();
  EXPECT_NE(silent.message().find("heartbeat of trainer 3"), std::string::npos)
      << silent.ToString();
  auto registration = scheduler.RegisterTrainer("late", Millis(300));
  EXPECT_EQ(registration.status().code(), StatusCode::kDeadlineExceeded)
      << registration.status().ToString();
}

}  // namespace
}  // namespace ember
