// A parameter server with a data directory, killed with SIGKILL between acknowledged pushes and
// started again on the same directory, must come back with every acknowledged update: its rows
// are compared, bit for bit, with an all-in-memory table that took the same pushes and was never
// killed. One client pushes in a fixed order, so the expected rows are exact.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <thread>

#include "common/child_process.h"
#include "embedding/embedding_table.h"
#include "ps/client.h"
#include "tests/test_util.h"

namespace ember {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint32_t kPartitions = 16;

constexpr const char* kConfig = R"(
cluster:
  servers: 1
  server_threads: 2
  partitions: 16
tables:
  - {name: item, dim: 8, seed: 3, optimizer: {kind: adagrad, learning_rate: 0.05}}
train:
  steps: 1
  user_tables: [item]
  item_tables: [item]
)";

std::string WaitForLine(const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string text = testing::ReadFile(path);
    if (!text.empty() && text.back() == '\n') return text.substr(0, text.size() - 1);
    std::this_thread::sleep_for(milliseconds(20));
  }
  return "";
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

class RecoveryTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RecoveryTest, ServerKilledBetweenAcknowledgedPushesComesBackWithAllOfThem) {
  testing::TempDir dir;
  const std::string config = dir.path() + "/job.yaml";
  std::ofstream(config) << kConfig;
  const std::string log = dir.path() + "/cluster.log";
  const std::string endpoint_file = dir.path() + "/scheduler";
  ChildProcess scheduler(
      {EMBER_BINARY, "scheduler", "--config", config, "--endpoint-file", endpoint_file}, log);
  const std::string endpoint = WaitForLine(endpoint_file, seconds(20));
  ASSERT_FALSE(endpoint.empty()) << testing::ReadFile(log);
  // A budget of a few hundred rows: most of the 5000 live on disk.
  const std::vector<std::string> server_argv = {
      EMBER_BINARY,    "server",         "--scheduler", endpoint,   "--threads", "2",
      "--data-dir",    dir.path() + "/server", "--memory-budget", GetParam(),
      "--durability", "ack"};
  auto server = std::make_unique<ChildProcess>(server_argv, log);

  ps::ClientOptions options;
  options.scheduler_endpoint = endpoint;
  options.request_timeout = milliseconds(60'000);
  auto client = ps::Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString() << testing::ReadFile(log);
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
                             << testing::ReadFile(log);
    ASSERT_TRUE(reference.Push(keys, grads).ok());
    touched.insert(keys.begin(), keys.end());
    if (step == kSteps / 2) {
      // Every push so far was acknowledged; kill without warning and start again.
      server->Signal(SIGKILL);
      ASSERT_EQ(server->WaitExit(seconds(20)), 128 + SIGKILL);
      server = std::make_unique<ChildProcess>(server_argv, log);
    }
  }
  const std::vector<uint64_t> keys(touched.begin(), touched.end());
  std::vector<float> got(keys.size() * dim), want(keys.size() * dim);
  ASSERT_TRUE((*client)->Pull("item", keys, got).Wait().ok());
  ASSERT_TRUE(reference.Pull(keys, want).ok());
  double got_sum = 0, want_sum = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    got_sum += got[i];
    want_sum += want[i];
  }
  EXPECT_EQ(got_sum, want_sum);
  EXPECT_EQ(got, want);
  auto stats = (*client)->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ASSERT_EQ(stats->size(), 1u);
  EXPECT_EQ((*stats)[0].tables.at(0).rows, reference.rows());
  EXPECT_NE(testing::ReadFile(log).find("server 0: serving"), std::string::npos);
  server->Stop();
  scheduler.Stop();
}

// "0": every row in memory, only the log on disk; "20000": about 550 rows in memory.
INSTANTIATE_TEST_SUITE_P(Budgets, RecoveryTest, ::testing::Values("0", "20000"));

// Starts a scheduler and one server on `data_dir`; returns the server's exit code.
int ServeOnce(const std::string& scratch, const std::string& data_dir, const std::string& log) {
  const std::string config = scratch + "/job.yaml";
  std::ofstream(config) << kConfig;
  const std::string endpoint_file = scratch + "/scheduler-" + std::to_string(std::rand());
  ChildProcess scheduler(
      {EMBER_BINARY, "scheduler", "--config", config, "--endpoint-file", endpoint_file}, log);
  const std::string endpoint = WaitForLine(endpoint_file, seconds(20));
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
