// Tests for the servers' worker threads: their default count, and who serves the requests.
#include <gtest/gtest.h>
#include <sched.h>

#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "common/thread_name.h"
#include "local/local_cluster.h"
#include "ps/client/checkpoint.h"
#include "ps/client/client.h"
#include "ps/server/server.h"
#include "tests/test_util.h"

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

// The CPU time, in ns, that `cluster`'s server threads whose name starts with `prefix` have
// spent (the kernel's schedstat of each thread); also how many there are.
struct ThreadsCpu {
  size_t threads = 0;
  uint64_t ns = 0;
};
ThreadsCpu CpuOfThreadsNamed(const local::LocalCluster& cluster, const std::string& prefix) {
  ThreadsCpu cpu;
  for (pid_t id : cluster.server_thread_ids()) {
    if (!ThreadNameOf(id).starts_with(prefix)) continue;
    ++cpu.threads;
    std::ifstream schedstat("/proc/self/task/" + std::to_string(id) + "/schedstat");
    uint64_t ns = 0;
    schedstat >> ns;
    cpu.ns += ns;
  }
  return cpu;
}

// With one worker thread, the thread reading the server's socket (the router) serves the pulls
// and pushes itself, and the worker stays idle but for a checkpoint; with three, the router hands
// them to the workers, which do the work. Either way a reader's lookup goes to the readers' worker,
// and the answers are the same.
TEST(WorkerThreadsTest, OneWorkerServesOnTheSocketsThreadSeveralBehindARouter) {
  TableSpec spec{.name = "item", .dim = 64, .seed = 3};
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.optimizer.learning_rate = 0.1f;
  std::vector<uint64_t> keys(4000);
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
    const ThreadsCpu router_before = CpuOfThreadsNamed(cluster, "ps-router");
    const ThreadsCpu workers_before = CpuOfThreadsNamed(cluster, "ps-worker-");
    std::vector<float> pulled(gradients.size());
    for (uint64_t clock = 0; clock < 40; ++clock) {
      ASSERT_TRUE((*trainer)->Push("item", keys, gradients, clock).Wait().ok());
      ASSERT_TRUE((*trainer)->Pull("item", keys, pulled).Wait().ok());
    }
    const ThreadsCpu router = CpuOfThreadsNamed(cluster, "ps-router");
    const ThreadsCpu worker_threads = CpuOfThreadsNamed(cluster, "ps-worker-");
    EXPECT_EQ(router.threads, 1u);
    EXPECT_EQ(worker_threads.threads, workers);
    EXPECT_EQ(CpuOfThreadsNamed(cluster, "ps-readers").threads, 1u);
    const uint64_t by_router = router.ns - router_before.ns;
    const uint64_t by_workers = worker_threads.ns - workers_before.ns;
    if (workers == 1) {
      EXPECT_GT(by_router, 2 * by_workers) << by_router << " ns against " << by_workers;
    } else {
      EXPECT_GT(by_workers, by_router) << by_workers << " ns against " << by_router;
    }
    if (workers == 1) {
      // A checkpoint, which may take long, still goes to the worker.
      ember::testing::TempDir dir;
      const ThreadsCpu router_then = CpuOfThreadsNamed(cluster, "ps-router");
      const ThreadsCpu worker_then = CpuOfThreadsNamed(cluster, "ps-worker-");
      auto manifest = CheckpointServers(**trainer, dir.path() + "/cut", 1, Millis(60'000));
      ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
      const uint64_t writing = CpuOfThreadsNamed(cluster, "ps-worker-").ns - worker_then.ns;
      const uint64_t forwarding = CpuOfThreadsNamed(cluster, "ps-router").ns - router_then.ns;
      EXPECT_GT(writing, forwarding) << writing << " ns against " << forwarding;
    }
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
  }
  EXPECT_EQ(answers.front(), answers.back());
}

}  // namespace
}  // namespace ember::ps
