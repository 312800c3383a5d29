// `ember replica` as a process beside a cluster of processes on loopback, each stopped by PID when
// the test ends (also on failure): the replica survives the loss of its stream (a training server
// killed with SIGKILL and started again on its data directory forgets the stream; the replica
// starts it again and catches up) and of its own process (killed, it starts again from the rows it
// saved in its data directory, serving them at once, then catches up).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "common/child_process.h"
#include "ps/client/client.h"
#include "tests/test_util.h"

namespace ember {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kConfig = R"(cluster:
  servers: 2
  server_threads: 1
  partitions: 16
tables:
  - {name: item, dim: 8, seed: 3, optimizer: {kind: adagrad, learning_rate: 0.05}}
train:
  steps: 1
  user_tables: [item]
  item_tables: [item]
)";

class ReplicaProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string config = dir_.path() + "/job.yaml";
    std::ofstream(config) << kConfig;
    log_ = dir_.path() + "/cluster.log";
    scheduler_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{EMBER_BINARY, "scheduler", "--config", config, "--endpoint-file",
                                 dir_.path() + "/scheduler"},
        log_);
    endpoint_ = testing::WaitForLine(dir_.path() + "/scheduler", seconds(20));
    ASSERT_FALSE(endpoint_.empty()) << testing::ReadFile(log_);
    for (int i = 0; i < 2; ++i) {
      server_argv_.push_back({EMBER_BINARY, "server", "--scheduler", endpoint_, "--data-dir",
                              dir_.path() + "/server-" + std::to_string(i)});
      servers_.push_back(std::make_unique<ChildProcess>(server_argv_.back(), log_));
    }
    auto trainer = Connect(endpoint_, false);
    ASSERT_TRUE(trainer.ok()) << trainer.status().ToString() << testing::ReadFile(log_);
    trainer_ = std::move(*trainer);
    keys_.resize(400);
    std::iota(keys_.begin(), keys_.end(), 1);
  }
  void TearDown() override {
    reader_.reset();
    trainer_.reset();
    if (replica_) replica_->Stop();
    for (auto& server : servers_) server->Stop();
    if (scheduler_) scheduler_->Stop();
  }
  Result<std::unique_ptr<ps::Client>> Connect(const std::string& endpoint, bool read_only) {
    ps::ClientOptions options;
    options.scheduler_endpoint = endpoint;
    options.read_only = read_only;
    options.request_timeout = milliseconds(30'000);
    options.register_timeout = milliseconds(30'000);
    return ps::Client::Connect(std::move(options));
  }
  void StartReplica() {
    const std::string endpoint_file = dir_.path() + "/replica-endpoint";
    std::remove(endpoint_file.c_str());
    replica_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{EMBER_BINARY, "replica", "--scheduler", endpoint_, "--data-dir",
                                 dir_.path() + "/replica", "--save-s", "1", "--poll-ms", "10",
                                 "--endpoint-file", endpoint_file},
        log_);
    const std::string endpoint = testing::WaitForLine(endpoint_file, seconds(30));
    ASSERT_FALSE(endpoint.empty()) << testing::ReadFile(log_);
    auto reader = Connect(endpoint, true);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString() << testing::ReadFile(log_);
    reader_ = std::move(*reader);
  }
  void Push(float gradient) {
    const std::vector<float> grads(keys_.size() * 8, gradient);
    ASSERT_TRUE(trainer_->Push("item", keys_, grads).Wait().ok()) << testing::ReadFile(log_);
  }
  // Waits (30 s at most) until the replica answers as the cluster does.
  bool ReplicaMatches() {
    std::vector<float> truth(keys_.size() * 8), rows(truth.size());
    if (!trainer_->Lookup("item", keys_, truth).Wait().ok()) return false;
    const auto deadline = std::chrono::steady_clock::now() + seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (reader_->Lookup("item", keys_, rows).Wait().ok() && rows == truth) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return false;
  }

  testing::TempDir dir_;
  std::string log_, endpoint_;
  std::unique_ptr<ChildProcess> scheduler_, replica_;
  std::vector<std::vector<std::string>> server_argv_;
  std::vector<std::unique_ptr<ChildProcess>> servers_;
  std::unique_ptr<ps::Client> trainer_, reader_;
  std::vector<uint64_t> keys_;
};

TEST_F(ReplicaProcessTest, SurvivesAServerRestartAndItsOwnDeath) {
  Push(1.0f);
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  ASSERT_TRUE(ReplicaMatches()) << testing::ReadFile(log_);

  // A training server dies and comes back on its data directory: it forgot the stream.
  servers_[0]->Signal(SIGKILL);
  ASSERT_EQ(servers_[0]->WaitExit(seconds(20)), 128 + SIGKILL);
  servers_[0] = std::make_unique<ChildProcess>(server_argv_[0], log_);
  Push(-0.5f);  // waits for the server to be back
  EXPECT_TRUE(ReplicaMatches()) << testing::ReadFile(log_);

  // The replica dies after saving its rows, and comes back serving them at once.
  std::this_thread::sleep_for(milliseconds(2'500));  // a save (every second) after the catch-up
  std::vector<float> saved(keys_.size() * 8);
  ASSERT_TRUE(reader_->Lookup("item", keys_, saved).Wait().ok());
  reader_.reset();
  replica_->Signal(SIGKILL);
  ASSERT_EQ(replica_->WaitExit(seconds(20)), 128 + SIGKILL);
  Push(2.0f);
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  std::vector<float> rows(saved.size());
  EXPECT_TRUE(reader_->Lookup("item", keys_, rows).Wait().ok());  // no "catching up"
  EXPECT_TRUE(ReplicaMatches()) << testing::ReadFile(log_);
  const std::string log = testing::ReadFile(log_);
  EXPECT_NE(log.find("replica: serving the rows saved in"), std::string::npos);
}

}  // namespace
}  // namespace ember
