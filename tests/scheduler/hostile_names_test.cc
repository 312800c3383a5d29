// The scheduler echoes a peer's megabyte-long barrier name only cut short.
#include <gtest/gtest.h>

#include <thread>

#include "common/rpc_channel.h"
#include "scheduler/scheduler.h"

namespace ember::scheduler {
namespace {

constexpr size_t kHugeName = size_t{1} << 20;

TEST(HostileNamesTest, HugeBarrierNameIsCutShortInErrors) {
  SchedulerOptions options;
  options.num_servers = 1;
  options.num_partitions = 4;
  options.tables.push_back(TableSpec{.name = "t", .dim = 2});
  Scheduler scheduler(options);
  ASSERT_TRUE(scheduler.Start().ok());
  std::thread thread([&] { scheduler.Run(); });

  Context context;
  RpcChannel channel(context, scheduler.endpoint());
  const std::string huge(kHugeName, 'b');
  auto barrier = channel.Call(1, wire::EncodeBarrier({1, 0}, huge, 0), Millis(5000));
  scheduler.RequestStop();
  thread.join();

  ASSERT_TRUE(barrier.ok()) << barrier.status().ToString();
  const std::string message(barrier->status.message());
  EXPECT_EQ(barrier->status.code(), StatusCode::kInvalidArgument) << message.substr(0, 200);
  EXPECT_NE(message.find("...' (" + std::to_string(kHugeName) + " bytes)"), std::string::npos);
  EXPECT_LT(message.size(), 200u);
}

}  // namespace
}  // namespace ember::scheduler
