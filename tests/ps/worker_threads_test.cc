// Tests for the servers' worker threads: their default count, and who serves the requests.
#include <gtest/gtest.h>
#include <sched.h>

#include <numeric>
#include <string>
#include <vector>

#include "common/thread_name.h"
#include "local/local_cluster.h"
#include "ps/client/client.h"
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

// The names of `cluster`'s server threads that start with `prefix`.
size_t ThreadsNamed(const local::LocalCluster& cluster, const std::string& prefix) {
  size_t count = 0;
  for (pid_t id : cluster.server_thread_ids()) count += ThreadNameOf(id).starts_with(prefix);
  return count;
}

// With one worker thread, the thread reading the server's socket serves the requests itself (no
// router, no other worker); with three, a router hands them to three workers. Either way a
// reader's lookup goes to the readers' worker, and the answers are the same.
TEST(WorkerThreadsTest, OneWorkerServesOnTheSocketsThreadSeveralBehindARouter) {
  TableSpec spec{.name = "item", .dim = 4, .seed = 3};
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.optimizer.learning_rate = 0.1f;
  std::vector<uint64_t> keys(300);
  std::iota(keys.begin(), keys.end(), 7);
  std::vector<float> gradients(keys.size() * spec.dim);
  for (size_t i = 0; i < gradients.size(); ++i) gradients[i] = 0.001f * float(i % 17) - 0.008f;
  std::vector<std::vector<float>> answers;
  for (uint32_t workers : {1u, 3u}) {
    SCOPED_TRACE("worker threads " + std::to_string(workers));
    local::LocalCluster cluster(
        {spec},
        {.num_servers = 1, .num_partitions = 16, .worker_threads = workers, .authenticate = true});
    ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
    auto trainer = cluster.Connect();
    ASSERT_TRUE(trainer.ok()) << trainer.status().ToString();
    for (uint64_t clock = 0; clock < 3; ++clock) {
      ASSERT_TRUE((*trainer)->Push("item", keys, gradients, clock).Wait().ok());
    }
    std::vector<float> pulled(gradients.size());
    ASSERT_TRUE((*trainer)->Pull("item", keys, pulled).Wait().ok());
    ps::ClientOptions options;
    options.name = "reader";
    options.read_only = true;
    options.security = cluster.reader_security();
    auto reader = cluster.Connect(std::move(options));
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    std::vector<float> looked_up(gradients.size());
    ASSERT_TRUE((*reader)->Lookup("item", keys, looked_up).Wait().ok());
    EXPECT_EQ(looked_up, pulled);
    answers.push_back(pulled);
    // Named by now: each thread names itself as it starts, before it serves anything.
    EXPECT_EQ(ThreadsNamed(cluster, "ps-worker-"), workers);
    EXPECT_EQ(ThreadsNamed(cluster, "ps-router"), workers == 1 ? 0u : 1u);
    EXPECT_EQ(ThreadsNamed(cluster, "ps-readers"), 1u);
  }
  EXPECT_EQ(answers.front(), answers.back());
}

}  // namespace
}  // namespace ember::ps
