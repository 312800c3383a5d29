// A scheduler that dies and is started again does not end the job: an `ember scheduler` process
// with a data directory is SIGKILLed 10 times at random moments of a bsp run (two `ember server`
// processes, a third joining, the first drained, two trainers in this process), each time
// started again on the same directory and endpoint; the run finishes with every row and dense
// weight bit for bit those of the same run with the scheduler left alone, no move half-done, and
// every partition owned by exactly one server that is not the drained one, and every periodic
// checkpoint cut written. Half of the outages
// last over a second, so that the servers log that they wait for the scheduler.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "common/child_process.h"
#include "local/cluster_config.h"
#include "ps/client/client.h"
#include "ps/client/scheduler_client.h"
#include "tests/test_util.h"
#include "trainer/cpu_backend.h"
#include "trainer/data_config.h"
#include "trainer/dense_table.h"
#include "trainer/tower_batch.h"
#include "trainer/trainer.h"

namespace ember {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr uint32_t kSteps = 160;
constexpr uint32_t kTrainers = 2;
constexpr int kKills = 10;
constexpr uint64_t kJoinAt = 10;   // the third server joins after this step
constexpr uint64_t kDrainAt = 40;  // and server 0 is drained after this one
constexpr uint64_t kCutEvery = 25;  // periodic checkpoint cuts

constexpr const char* kConfig = R"(
cluster:
  servers: 2
  trainers: 2
  server_threads: 1
  partitions: 32
tables:
  - {name: user, dim: 8, optimizer: {kind: sgd, learning_rate: 0.5}}
  - {name: item, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.1}}
model:
  embedding_dim: 8
  user_slots: 1
  item_slots: 1
  hidden: [16]
  output_dim: 8
  temperature: 0.1
  learning_rate: 0.01
data:
  kind: synthetic
  synthetic: {user_slots: 1, item_slots: 1, vocabulary: 3000, exponent: 1.05, seed: 7}
train:
  steps: 160
  batch_size: 64
  backend: cpu
  log_every: 0
  mode: bsp
  dense: servers
  user_tables: [user]
  item_tables: [item]
)";

// The scheduler process, started again on the same directory after each kill.
class SchedulerProcess {
 public:
  SchedulerProcess(std::string config, std::string dir, std::string log)
      : config_(std::move(config)), dir_(std::move(dir)), log_(std::move(log)) {
    Start();
    endpoint_ = testing::WaitForLine(dir_ + "/endpoint", seconds(20));
  }
  const std::string& endpoint() const { return endpoint_; }
  // SIGKILL, then a new process after `down` (the others wait for it meanwhile).
  void KillAndRestart(milliseconds down) {
    std::lock_guard lock(mutex_);
    process_->Signal(SIGKILL);
    process_->WaitExit(seconds(10));
    std::this_thread::sleep_for(down);
    Start();
  }

 private:
  void Start() {
    process_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{EMBER_BINARY, "scheduler", "--config", config_, "--data-dir",
                                 dir_ + "/state", "--endpoint-file", dir_ + "/endpoint"},
        log_);
  }
  const std::string config_, dir_, log_;
  std::mutex mutex_;
  std::unique_ptr<ChildProcess> process_;
  std::string endpoint_;
};

std::unique_ptr<ChildProcess> StartServer(const std::string& endpoint, const std::string& log,
                                          bool join) {
  std::vector<std::string> args = {EMBER_BINARY, "server", "--scheduler", endpoint, "--threads",
                                   "1", "--move-bandwidth", "100000"};
  if (join) args.push_back("--join");
  return std::make_unique<ChildProcess>(args, log);
}

// Asks until the scheduler answers (it may be restarting), bounded.
template <typename Call>
auto AskUntilAnswered(Call&& call) {
  auto result = call();
  for (int attempt = 0; attempt < 100 && !result.ok(); ++attempt) {
    std::this_thread::sleep_for(milliseconds(100));
    result = call();
  }
  return result;
}

struct RunResult {
  std::vector<float> values;  // rows of every key the data used, then the dense rows
  ClusterStatus status;       // once every move ended
  int kills = 0;
  std::vector<std::string> checkpoints;  // the step-* folders with a manifest
};

std::vector<std::string> CheckpointsIn(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (std::filesystem::exists(entry.path() / "MANIFEST")) {
      found.push_back(entry.path().filename().string());
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

// Trainer `rank`'s data: as `ember train --rank` draws it, from a seed of its own.
trainer::DataConfig DataOfRank(const local::ClusterConfig& config, uint32_t rank) {
  trainer::DataConfig data = config.data;
  data.synthetic.seed += 0x9E3779B97F4A7C15ull * rank;
  return data;
}

// One trainer of the run, in this process.
struct TrainerParts {
  std::unique_ptr<ps::Client> client;
  std::unique_ptr<trainer::Backend> backend;
  std::unique_ptr<trainer::DataSource> data;
  std::unique_ptr<trainer::Trainer> loop;
};

TrainerParts MakeTrainer(const local::ClusterConfig& config, const std::string& endpoint,
                         uint32_t rank) {
  TrainerParts parts;
  ps::ClientOptions options;
  options.scheduler_endpoint = endpoint;
  options.name = "trainer-" + std::to_string(rank);
  options.heartbeat_interval = Millis(500);
  auto client = ps::Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  if (!client.ok()) return parts;
  parts.client = std::move(*client);
  parts.backend = trainer::MakeCpuBackend(config.model, trainer::InitDenseWeights(config.model));
  auto data = trainer::MakeDataSource(DataOfRank(config, rank));
  EXPECT_TRUE(data.ok());
  parts.data = std::move(*data);
  trainer::TrainOptions train = config.train;
  train.rank = rank;
  auto loop = trainer::Trainer::Create(parts.client.get(), parts.backend.get(), parts.data.get(),
                                       config.model, train);
  EXPECT_TRUE(loop.ok()) << loop.status().ToString();
  if (loop.ok()) parts.loop = std::move(*loop);
  return parts;
}

// The rows of every key the run's data used, then the dense table's rows.
std::vector<float> RowsOf(ps::Client& client, const local::ClusterConfig& config) {
  std::vector<float> out;
  for (const char* table : {"user", "item"}) {
    std::set<uint64_t> used;
    for (uint32_t rank = 0; rank < kTrainers; ++rank) {
      auto data = trainer::MakeDataSource(DataOfRank(config, rank));
      EXPECT_TRUE(data.ok());
      trainer::Batch batch;
      for (uint32_t step = 0; step < kSteps; ++step) {
        EXPECT_TRUE((*data)->Next(config.train.batch_size, &batch).ok());
        const auto& slot = std::string(table) == "user" ? batch.user_keys[0] : batch.item_keys[0];
        used.insert(slot.begin(), slot.end());
      }
    }
    std::vector<uint64_t> keys(used.begin(), used.end());
    std::vector<float> rows(keys.size() * 8);
    EXPECT_TRUE(client.Pull(table, keys, rows).Wait().ok());
    out.insert(out.end(), rows.begin(), rows.end());
  }
  trainer::DenseTable dense(config.model);
  std::vector<float> dense_rows(dense.buffer_floats());
  std::vector<ps::Ticket> pulls;
  dense.StartPull(client, dense_rows, &pulls);
  EXPECT_TRUE(trainer::WaitAll(pulls).ok());
  out.insert(out.end(), dense_rows.begin(), dense_rows.end());
  return out;
}

RunResult Train(const testing::TempDir& dir, bool kill_scheduler, uint32_t seed) {
  const std::string config_path = dir.path() + "/job.yaml";
  // Periodic checkpoint cuts, so that kills also fall on cuts under way.
  std::string text = kConfig;
  text.insert(text.find("cluster:\n") + 9,
              "  checkpoint_every: " + std::to_string(kCutEvery) +
                  "\n  checkpoint_keep: 0\n  checkpoint_dir: " + dir.path() +
                  "/ckpt\n");
  std::ofstream(config_path) << text;
  auto config = local::LoadClusterConfig(config_path);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  const std::string log = dir.path() + "/cluster.log";
  SchedulerProcess scheduler(config_path, dir.path(), log);
  const std::string endpoint = scheduler.endpoint();
  EXPECT_FALSE(endpoint.empty()) << testing::ReadFile(log);
  std::vector<std::unique_ptr<ChildProcess>> servers;
  for (int i = 0; i < 2; ++i) servers.push_back(StartServer(endpoint, log, false));

  std::vector<TrainerParts> trainers;
  for (uint32_t rank = 0; rank < kTrainers; ++rank) {
    trainers.push_back(MakeTrainer(*config, endpoint, rank));
  }
  ps::SchedulerClient tool(endpoint);
  std::atomic<uint64_t> clock{0};
  trainers[0].loop->set_clock_observer({[&](uint64_t done) {
                                 clock = done;
                                 std::this_thread::sleep_for(milliseconds(15));
                                 if (done == kJoinAt) servers.push_back(StartServer(endpoint, log, true));
                                 if (done == kDrainAt) {
                                   EXPECT_TRUE(AskUntilAnswered([&] {
                                                 return tool.Drain(0, Millis(1000));
                                               }).ok());
                                 }
                               },
                               {}});
  RunResult result;
  std::atomic<bool> finished{false};
  std::thread killer([&] {
    // The processes it starts get SIGTERM when the thread that started them ends (their parent-death
    // signal is the thread's): it lives until the run is over.
    auto wait_for_the_end = [&] {
      for (int wait = 0; wait < 120000 && !finished.load(); ++wait) {
        std::this_thread::sleep_for(milliseconds(5));
      }
    };
    if (!kill_scheduler) return;
    std::mt19937 random(seed);
    for (int kill = 0; kill < kKills; ++kill) {
      // Every 12 steps from step 6, at a random moment within the next few; every other one
      // at the next checkpoint cut instead (within 30 ms of the step that ends at it).
      const bool at_cut = kill % 2 == 1;
      uint64_t due = 6 + 12 * kill;
      if (at_cut) due = (due + kCutEvery - 1) / kCutEvery * kCutEvery;
      for (int wait = 0; wait < 20000 && clock.load() < due; ++wait) {
        std::this_thread::sleep_for(milliseconds(1));
      }
      if (clock.load() >= kSteps) break;
      std::this_thread::sleep_for(milliseconds(random() % (at_cut ? 30 : 150)));
      // Every other outage outlasts the servers' heartbeat timeout (1 s): they say so.
      const milliseconds down(kill % 2 == 0 ? random() % 300 : 1200 + random() % 600);
      scheduler.KillAndRestart(down);
      ++result.kills;
    }
    wait_for_the_end();
  });
  // Trainer 0 on this thread (the servers its observer starts live as long as the thread does).
  Result<trainer::TrainSummary> other = Internal("not run");
  std::thread second([&] { other = trainers[1].loop->Run(kSteps); });
  auto summary = trainers[0].loop->Run(kSteps);
  second.join();
  if (summary.ok() && !other.ok()) summary = other.status();
  const std::string logged = testing::ReadFile(log);
  EXPECT_TRUE(summary.ok()) << summary.status().ToString() << "\n"
                            << logged.substr(logged.size() - std::min<size_t>(logged.size(), 4000));
  for (int i = 0; i < 200 && summary.ok(); ++i) {
    auto status = tool.GetClusterStatus(Millis(1000));
    if (status.ok()) {
      result.status = *status;
      if (status->moves_in_flight == 0 && status->moves_planned == 0 &&
          status->servers.size() == 3 && status->servers[0].state == "drained") {
        break;
      }
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  if (summary.ok()) result.values = RowsOf(*trainers[0].client, *config);
  result.checkpoints = CheckpointsIn(dir.path() + "/ckpt");
  finished = true;
  killer.join();
  return result;
}

TEST(SchedulerRestartProcessTest, TenSchedulerKillsDuringABspRunWithAJoinAndADrainChangeNothing) {
  testing::TempDir plain_dir, killed_dir;
  const uint32_t seed = std::random_device{}();
  std::printf("scheduler kills: seed %u\n", seed);
  const RunResult plain = Train(plain_dir, false, seed);
  const RunResult killed = Train(killed_dir, true, seed);
  EXPECT_EQ(killed.kills, kKills);
  const std::string log = testing::ReadFile(killed_dir.path() + "/cluster.log");
  size_t restarts = 0, during_moves = 0, during_cuts = 0;
  const std::regex restarted(
      "restarted from [^:]*: \\d+ servers, routing epoch \\d+, (\\d+) moves in flight, "
      "\\d+ trainers \\(highest clock \\d+\\), (\\d) checkpoint cut");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), restarted);
       it != std::sregex_iterator(); ++it) {
    ++restarts;
    during_moves += std::stoi((*it)[1]) > 0;
    during_cuts += std::stoi((*it)[2]) > 0;
  }
  EXPECT_EQ(restarts, static_cast<size_t>(kKills)) << log;
  EXPECT_GT(during_moves, 0u) << "no kill fell while partitions moved";
  std::printf("scheduler kills: %zu restarts found partition moves in flight, %zu a checkpoint "
              "cut under way\n", during_moves, during_cuts);
  EXPECT_NE(log.find("answers again after"), std::string::npos) << "the servers said nothing";

  for (const RunResult* run : {&plain, &killed}) {
    const ClusterStatus& status = run->status;
    EXPECT_EQ(status.moves_in_flight, 0u);
    EXPECT_EQ(status.moves_planned, 0u);
    ASSERT_EQ(status.servers.size(), 3u);
    EXPECT_EQ(status.servers[0].state, "drained");
    EXPECT_EQ(status.servers[0].partitions, 0u);
    EXPECT_EQ(status.servers[1].partitions + status.servers[2].partitions, 32u);
    for (uint32_t owner : status.routing.owners) EXPECT_TRUE(owner == 1 || owner == 2) << owner;
  }
  // Every periodic cut was written, the kills notwithstanding.
  EXPECT_EQ(plain.checkpoints.size(), kSteps / kCutEvery);
  EXPECT_EQ(killed.checkpoints, plain.checkpoints);
  ASSERT_EQ(plain.values.size(), killed.values.size());
  size_t differ = 0;
  for (size_t i = 0; i < plain.values.size(); ++i) differ += plain.values[i] != killed.values[i];
  EXPECT_EQ(differ, 0u) << "of " << plain.values.size() << " values (seed " << seed << ")";
  std::printf("scheduler kills: %d kills, %zu values compared bit for bit, %zu differ\n",
              killed.kills, plain.values.size(), differ);
}

}  // namespace
}  // namespace ember
