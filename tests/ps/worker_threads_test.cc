// Tests for the servers' default worker thread count.
#include <gtest/gtest.h>
#include <sched.h>

#include "ps/server/server.h"

namespace ember::ps {
namespace {

uint32_t AllowedCores() {
  cpu_set_t allowed;
  EXPECT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  return static_cast<uint32_t>(CPU_COUNT(&allowed));
}

TEST(WorkerThreadsTest, LeavesACorePerServerAndNeverDropsToZero) {
  const uint32_t cores = AllowedCores();
  ASSERT_GE(cores, 1u);
  EXPECT_EQ(DefaultWorkerThreads(), cores > 1 ? cores - 1 : 1);
  EXPECT_EQ(DefaultWorkerThreads(2), cores / 2 > 1 ? cores / 2 - 1 : 1);
  // More servers than cores: each still gets one worker.
  EXPECT_EQ(DefaultWorkerThreads(cores + 7), 1u);
  EXPECT_EQ(DefaultWorkerThreads(0), DefaultWorkerThreads(1));
}

TEST(WorkerThreadsTest, ZeroInTheOptionsMeansTheDefault) {
  // A server built with worker_threads 0 resolves it at once; it needs no scheduler for that.
  Server server(ServerOptions{.scheduler_endpoint = "tcp://127.0.0.1:1", .worker_threads = 0});
  EXPECT_EQ(server.worker_threads(), DefaultWorkerThreads());
  Server three(ServerOptions{.scheduler_endpoint = "tcp://127.0.0.1:1", .worker_threads = 3});
  EXPECT_EQ(three.worker_threads(), 3u);
}

}  // namespace
}  // namespace ember::ps
