// A parameter server with a data directory, killed with SIGKILL between acknowledged pushes and
// started again on the same directory, must come back with every acknowledged update: its rows
// are compared, bit for bit, with an all-in-memory table that took the same pushes and was never
// killed. One client pushes in a fixed order, so the expected rows are exact.
//
// The crash drill kills the servers of a two-server cluster at random moments, again and again,
// while a client trains against them; the rows must still be exact at the end.
//
// Killed while requests are in flight, it must also lose none and apply none twice: the client
// sends them again once the server is back, and the server applies a push it had already applied
// (its answer lost with the process) no more.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "common/child_process.h"
#include "embedding/embedding_table.h"
#include "ps/client/client.h"
#include "tests/test_util.h"

namespace ember {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint32_t kPartitions = 16;

constexpr const char* kConfigRest = R"(
  server_threads: 2
  partitions: 16
tables:
  - {name: item, dim: 8, seed: 3, optimizer: {kind: adagrad, learning_rate: 0.05}}
train:
  steps: 1
  user_tables: [item]
  item_tables: [item]
)";

// The job config of a cluster of `servers`.
std::string ConfigFor(uint32_t servers) {
  return "cluster:\n  servers: " + std::to_string(servers) + kConfigRest;
}

// Step `step`'s unique keys (a skewed draw from 5000 ids) and gradients.
void MakeStep(int step, std::vector<uint64_t>* keys, std::vector<float>* grads, uint32_t dim) {
  std::mt19937_64 rng(1000 + step);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::set<uint64_t> unique;
  while (unique.size() < 300) unique.insert(static_cast<uint64_t>(uniform(rng) * uniform(rng) * 5000));
  keys->assign(unique.begin(), unique.end());
  grads->resize(keys->size() * dim);
  for (float& g : *grads) g = static_cast<float>(uniform(rng) - 0.5);
}

// A scheduler and servers, each with a data directory (memory budget GetParam(), durability ack),
// as processes on loopback, logging to log_; stopped by PID when the test ends, also on failure.
class RecoveryTest : public ::testing::TestWithParam<const char*> {
 protected:
  void StartCluster(uint32_t servers) {
    const std::string config = dir_.path() + "/job.yaml";
    std::ofstream(config) << ConfigFor(servers);
    log_ = dir_.path() + "/cluster.log";
    const std::string endpoint_file = dir_.path() + "/scheduler";
    scheduler_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{EMBER_BINARY, "scheduler", "--config", config, "--endpoint-file",
                                 endpoint_file},
        log_);
    endpoint_ = testing::WaitForLine(endpoint_file, seconds(20));
    ASSERT_FALSE(endpoint_.empty()) << testing::ReadFile(log_);
    for (uint32_t i = 0; i < servers; ++i) {
      server_argv_.push_back({EMBER_BINARY, "server", "--scheduler", endpoint_, "--threads", "2",
                              "--data-dir", dir_.path() + "/server-" + std::to_string(i),
                              "--memory-budget", GetParam(), "--durability", "ack"});
      servers_.push_back(std::make_unique<ChildProcess>(server_argv_.back(), log_));
    }
  }

  void TearDown() override {
    for (auto& server : servers_) server->Stop();
    if (scheduler_) scheduler_->Stop();
  }

  Result<std::unique_ptr<ps::Client>> Connect(ps::ClientOptions options) {
    options.scheduler_endpoint = endpoint_;
    options.request_timeout = milliseconds(60'000);
    return ps::Client::Connect(options);
  }

  // Kills server `i` without warning and starts it again on the same directory.
  void KillAndRestartServer(size_t i = 0) {
    servers_[i]->Signal(SIGKILL);
    ASSERT_EQ(servers_[i]->WaitExit(seconds(20)), 128 + SIGKILL);
    servers_[i] = std::make_unique<ChildProcess>(server_argv_[i], log_);
  }

  // The server's rows of `touched` equal, bit for bit, those of `reference`, which took the same
  // pushes once and was never killed; and it holds as many rows.
  void ExpectRowsOf(embedding::EmbeddingTable& reference, ps::Client& client,
                    const std::set<uint64_t>& touched) {
    const uint32_t dim = reference.dim();
    const std::vector<uint64_t> keys(touched.begin(), touched.end());
    std::vector<float> got(keys.size() * dim), want(keys.size() * dim);
    ASSERT_TRUE(client.Pull("item", keys, got).Wait().ok());
    ASSERT_TRUE(reference.Pull(keys, want).ok());
    double got_sum = 0, want_sum = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      got_sum += got[i];
      want_sum += want[i];
    }
    EXPECT_EQ(got_sum, want_sum);
    EXPECT_EQ(got, want);
    auto stats = client.Stats();
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    ASSERT_EQ(stats->size(), servers_.size());
    uint64_t rows = 0;
    for (const ServerStats& server : *stats) rows += server.tables.at(0).rows;
    EXPECT_EQ(rows, reference.rows());
  }

  testing::TempDir dir_;
  std::string log_;
  std::string endpoint_;
  std::vector<std::vector<std::string>> server_argv_;
  std::unique_ptr<ChildProcess> scheduler_;
  std::vector<std::unique_ptr<ChildProcess>> servers_;
};

TEST_P(RecoveryTest, ServerKilledBetweenAcknowledgedPushesComesBackWithAllOfThem) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(1));
  auto client = Connect({});
  ASSERT_TRUE(client.ok()) << client.status().ToString() << testing::ReadFile(log_);
  auto spec = (*client)->FindTable("item");
  ASSERT_TRUE(spec.ok());
  embedding::EmbeddingTable reference(**spec, kPartitions);  // never killed
  const uint32_t dim = (*spec)->dim;

  std::set<uint64_t> touched;
  constexpr int kSteps = 40;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<uint64_t> keys;
    std::vector<float> grads;
    MakeStep(step, &keys, &grads, dim);
    Status pushed = (*client)->Push("item", keys, grads, step).Wait();
    ASSERT_TRUE(pushed.ok()) << "step " << step << ": " << pushed.ToString()
                             << testing::ReadFile(log_);
    ASSERT_TRUE(reference.Push(keys, grads).ok());
    touched.insert(keys.begin(), keys.end());
    if (step == kSteps / 2) {
      // Every push so far was acknowledged.
      ASSERT_NO_FATAL_FAILURE(KillAndRestartServer());
    }
  }
  ExpectRowsOf(reference, **client, touched);
  EXPECT_NE(testing::ReadFile(log_).find("server 0: serving"), std::string::npos);
}

// Step `step` of the in-flight test: 2000 unique keys (a skewed draw from 20000 ids) in
// `chunks` disjoint pushes, each with its gradients. Pushes of one step touch different keys, so
// the order in which the server applies them does not change a bit of the result.
struct ChunkedStep {
  std::vector<uint64_t> keys;  // all of the step, ascending
  std::vector<std::vector<uint64_t>> chunk_keys;
  std::vector<std::vector<float>> chunk_grads;
};
ChunkedStep MakeChunkedStep(int step, size_t chunks, uint32_t dim) {
  std::mt19937_64 rng(5000 + step);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::set<uint64_t> unique;
  while (unique.size() < 2000) {
    unique.insert(static_cast<uint64_t>(uniform(rng) * uniform(rng) * 20000));
  }
  ChunkedStep out;
  out.keys.assign(unique.begin(), unique.end());
  const size_t per_chunk = (out.keys.size() + chunks - 1) / chunks;
  for (size_t first = 0; first < out.keys.size(); first += per_chunk) {
    const size_t last = std::min(out.keys.size(), first + per_chunk);
    out.chunk_keys.emplace_back(out.keys.begin() + first, out.keys.begin() + last);
    std::vector<float>& grads = out.chunk_grads.emplace_back((last - first) * dim);
    for (float& g : grads) g = static_cast<float>(uniform(rng) - 0.5);
  }
  return out;
}

// One training step against the cluster and the reference: pulls the step's rows (which must
// equal the reference's), hands the step's pushes to the client, calls `in_flight` while they may
// be under way, and waits for every one to be acknowledged.
void TrainStep(ps::Client& client, embedding::EmbeddingTable& reference, int step,
               std::set<uint64_t>* touched, const std::function<void()>& in_flight,
               const std::string& log) {
  constexpr size_t kChunks = 4;
  const uint32_t dim = reference.dim();
  const ChunkedStep batch = MakeChunkedStep(step, kChunks, dim);
  std::vector<float> got(batch.keys.size() * dim), want(batch.keys.size() * dim);
  Status pulled = client.Pull("item", batch.keys, got).Wait();
  ASSERT_TRUE(pulled.ok()) << "step " << step << ": " << pulled.ToString()
                           << testing::ReadFile(log);
  ASSERT_TRUE(reference.Pull(batch.keys, want).ok());
  ASSERT_EQ(got, want) << "rows differ at step " << step;
  std::vector<ps::Ticket> pushes;
  for (size_t c = 0; c < batch.chunk_keys.size(); ++c) {
    pushes.push_back(client.Push("item", batch.chunk_keys[c], batch.chunk_grads[c], step));
    ASSERT_TRUE(reference.Push(batch.chunk_keys[c], batch.chunk_grads[c]).ok());
  }
  in_flight();
  for (size_t c = 0; c < pushes.size(); ++c) {
    Status pushed = pushes[c].Wait();
    ASSERT_TRUE(pushed.ok()) << "step " << step << " push " << c << ": " << pushed.ToString()
                             << testing::ReadFile(log);
  }
  touched->insert(batch.keys.begin(), batch.keys.end());
}

ps::ClientOptions ManyMessagesPerPush() {
  ps::ClientOptions options;
  options.max_keys_per_message = 25;  // a push is 20 messages: many are in flight at a kill
  return options;
}

TEST_P(RecoveryTest, ServerKilledWithRequestsInFlightLosesNoneAndAppliesNoneTwice) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(1));
  auto client = Connect(ManyMessagesPerPush());
  ASSERT_TRUE(client.ok()) << client.status().ToString() << testing::ReadFile(log_);
  auto spec = (*client)->FindTable("item");
  ASSERT_TRUE(spec.ok());
  embedding::EmbeddingTable reference(**spec, kPartitions);  // never killed, each push once

  // Kills right after the pushes of a step were handed to the client, after a pause that varies,
  // so that the server dies before, while or after it applies them.
  const std::map<int, milliseconds> kills = {{3, milliseconds(0)}, {7, milliseconds(2)},
                                             {11, milliseconds(5)}, {15, milliseconds(1)}};
  std::set<uint64_t> touched;
  for (int step = 0; step < 18; ++step) {
    ASSERT_NO_FATAL_FAILURE(TrainStep(**client, reference, step, &touched, [&] {
      if (auto kill = kills.find(step); kill != kills.end()) {
        std::this_thread::sleep_for(kill->second);
        KillAndRestartServer();
      }
    }, log_));
  }
  ExpectRowsOf(reference, **client, touched);
  // Some requests were in flight at a kill and went out again.
  EXPECT_GT((*client)->requests_resent(), 0u) << testing::ReadFile(log_);
}

// The crash drill: while a client trains against two servers, another thread SIGKILLs one of
// them at a random moment (pulls, pushes, recovery, registration), 20 times, restarting each on
// its directory. The run finishes, and every row equals the reference's: no acknowledged push
// was lost and none was applied twice.
TEST_P(RecoveryTest, CrashDrillTwentyRandomKillsLoseNothingAndApplyNothingTwice) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(2));
  auto client = Connect(ManyMessagesPerPush());
  ASSERT_TRUE(client.ok()) << client.status().ToString() << testing::ReadFile(log_);
  auto spec = (*client)->FindTable("item");
  ASSERT_TRUE(spec.ok());
  embedding::EmbeddingTable reference(**spec, kPartitions);

  constexpr int kKills = 20;
  std::atomic<int> kills{0};
  std::atomic<bool> stop{false}, killer_done{false};
  std::thread killer([&] {
    std::mt19937 rng(20261125);
    std::uniform_int_distribution<int> pause_ms(20, 400);
    for (int k = 0; k < kKills && !stop.load(); ++k) {
      std::this_thread::sleep_for(milliseconds(pause_ms(rng)));
      const size_t victim = rng() % servers_.size();
      servers_[victim]->Signal(SIGKILL);
      const int exit_code = servers_[victim]->WaitExit(seconds(20));
      if (exit_code != 128 + SIGKILL) {
        ADD_FAILURE() << "server " << victim << " ended with " << exit_code
                      << ", not by the kill";
        break;
      }
      servers_[victim] = std::make_unique<ChildProcess>(server_argv_[victim], log_);
      kills.fetch_add(1);
    }
    killer_done.store(true);
    // The servers it restarted end with this thread (ChildProcess): it waits for the test.
    while (!stop.load()) std::this_thread::sleep_for(milliseconds(20));
  });
  std::set<uint64_t> touched;
  int steps = 0;
  // Bounded: at least 10 steps, and on until the killer is done (at most 500 steps).
  for (; steps < 500 && (steps < 10 || !killer_done.load()); ++steps) {
    TrainStep(**client, reference, steps, &touched, [] {}, log_);
    if (::testing::Test::HasFatalFailure()) break;
  }
  // The restarted servers live as long as the killer thread: it ends after the comparison.
  struct StopKiller {
    std::atomic<bool>& stop;
    std::thread& killer;
    ~StopKiller() {
      stop.store(true);
      killer.join();
    }
  } stop_killer{stop, killer};
  ASSERT_FALSE(::testing::Test::HasFatalFailure());
  // Its last kill may be under way: wait for it (bounded), then for the servers to serve.
  for (int i = 0; i < 3000 && !killer_done.load(); ++i) std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(kills.load(), kKills) << testing::ReadFile(log_);
  ExpectRowsOf(reference, **client, touched);
  std::printf("crash drill: %d kills over %d steps, %zu rows compared bit for bit, %llu requests "
              "resent\n",
              kills.load(), steps, touched.size(),
              static_cast<unsigned long long>((*client)->requests_resent()));
}

// "0": every row in memory, only the log on disk; "20000": about 550 rows in memory.
INSTANTIATE_TEST_SUITE_P(Budgets, RecoveryTest, ::testing::Values("0", "20000"));

// Starts a scheduler and one server on `data_dir`; returns the server's exit code.
int ServeOnce(const std::string& scratch, const std::string& data_dir, const std::string& log) {
  const std::string config = scratch + "/job.yaml";
  std::ofstream(config) << ConfigFor(1);
  const std::string endpoint_file = scratch + "/scheduler-" + std::to_string(std::rand());
  ChildProcess scheduler(
      {EMBER_BINARY, "scheduler", "--config", config, "--endpoint-file", endpoint_file}, log);
  const std::string endpoint = testing::WaitForLine(endpoint_file, seconds(20));
  if (endpoint.empty()) return -2;
  ChildProcess server({EMBER_BINARY, "server", "--scheduler", endpoint, "--data-dir", data_dir},
                      log);
  return server.WaitExit(seconds(30));
}

// A data directory that cannot be used stops the server at start with an error naming it; it
// never serves an empty or partial table in its place.
TEST(RecoveryTest, UnusableDataDirectoryIsAClearStartError) {
  testing::TempDir dir;
  const std::string log = dir.path() + "/cluster.log";
  // Another server's directory.
  const std::string foreign = dir.path() + "/foreign";
  std::filesystem::create_directories(foreign);
  std::ofstream(foreign + "/server-identity") << "5 tcp://127.0.0.1:*\n";
  EXPECT_EQ(ServeOnce(dir.path(), foreign, log), 1);
  EXPECT_NE(testing::ReadFile(log).find("belongs to server 5"), std::string::npos)
      << testing::ReadFile(log);
  // A corrupt row store.
  const std::string corrupt = dir.path() + "/corrupt";
  std::filesystem::create_directories(corrupt + "/rows");
  std::ofstream(corrupt + "/rows/CURRENT") << "MANIFEST-999999\n";
  EXPECT_EQ(ServeOnce(dir.path(), corrupt, log), 1);
  EXPECT_NE(testing::ReadFile(log).find("opening data directory '" + corrupt + "/rows'"),
            std::string::npos)
      << testing::ReadFile(log);
}

}  // namespace
}  // namespace ember
