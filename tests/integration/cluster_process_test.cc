// End-to-end: the `ember` binary's subcommands as real processes on loopback.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "local/cluster_config.h"
#include "common/child_process.h"
#include "tests/test_util.h"

namespace ember {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kSmallConfig = R"(
cluster:
  servers: 2
  server_threads: 1
  partitions: 64
tables:
  - {name: u0, dim: 16, optimizer: {kind: adagrad, learning_rate: 0.05}}
  - {name: u1, dim: 16, optimizer: {kind: adagrad, learning_rate: 0.05}}
  - {name: i0, dim: 16, optimizer: {kind: adagrad, learning_rate: 0.05}}
  - {name: i1, dim: 16, optimizer: {kind: adagrad, learning_rate: 0.05}}
model:
  embedding_dim: 16
  user_slots: 2
  item_slots: 2
  hidden: [32, 16]
  output_dim: 16
  temperature: 0.1
  learning_rate: 0.003
data:
  kind: synthetic
  synthetic: {user_slots: 2, item_slots: 2, vocabulary: 5000, exponent: 1.05, seed: 3,
              num_clusters: 16, signal: 0.95}
train:
  steps: 300
  batch_size: 128
  backend: cpu
  log_every: 30
  user_tables: [u0, u1]
  item_tables: [i0, i1]
)";

std::string WriteConfig(const testing::TempDir& dir, const std::string& text) {
  const std::string path = dir.path() + "/job.yaml";
  std::ofstream(path) << text;
  return path;
}

// Reads a number field of the flat JSON summary the trainer writes.
double JsonNumber(const std::string& json, const std::string& field) {
  std::smatch match;
  std::regex pattern("\"" + field + "\": ([-0-9.eE+]+)");
  if (!std::regex_search(json, match, pattern)) return -1e300;
  return std::stod(match[1]);
}

std::string WaitForFile(const std::string& path, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string text = testing::ReadFile(path);
    if (!text.empty()) return text;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return "";
}

// A scheduler and two servers of `config` as processes, logging to `log`; endpoint() is empty
// when the scheduler did not come up. They are stopped by PID when this goes out of scope.
class ServerProcesses {
 public:
  ServerProcesses(const testing::TempDir& dir, const std::string& config, const std::string& log) {
    const std::string endpoint_file = dir.path() + "/scheduler";
    processes_.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{EMBER_BINARY, "scheduler", "--config", config,
                                 "--endpoint-file", endpoint_file},
        log));
    endpoint_ = WaitForFile(endpoint_file, seconds(20));
    if (endpoint_.empty()) return;
    endpoint_.erase(endpoint_.find_last_not_of("\n") + 1);
    for (int i = 0; i < 2; ++i) {
      processes_.push_back(std::make_unique<ChildProcess>(
          std::vector<std::string>{EMBER_BINARY, "server", "--scheduler", endpoint_, "--threads",
                                   "1"},
          log));
    }
  }
  const std::string& endpoint() const { return endpoint_; }
  // Whether the scheduler and both servers are still up.
  bool running() {
    for (auto& process : processes_) {
      if (!process->running()) return false;
    }
    return processes_.size() == 3;
  }

 private:
  std::vector<std::unique_ptr<ChildProcess>> processes_;
  std::string endpoint_;
};

TEST(ClusterProcessTest, HelpAndUsageErrors) {
  testing::TempDir dir;
  const std::string log = dir.path() + "/out.log";
  for (const char* command : {"cluster", "scheduler", "server", "train"}) {
    ChildProcess help({EMBER_BINARY, command, "--help"}, log);
    EXPECT_EQ(help.WaitExit(seconds(20)), 0) << command;
  }
  EXPECT_NE(testing::ReadFile(log).find("usage: ember train"), std::string::npos);
  ChildProcess unknown({EMBER_BINARY, "train", "--stpes", "3"}, log);
  EXPECT_EQ(unknown.WaitExit(seconds(20)), 2);
  EXPECT_NE(testing::ReadFile(log).find("unknown flag '--stpes'"), std::string::npos);
}

TEST(ClusterProcessTest, ConfigErrorsNameTheField) {
  testing::TempDir dir;
  std::string text = kSmallConfig;
  text.replace(text.find("learning_rate: 0.003"), 20, "learing_rate: 0.003");
  const std::string config = WriteConfig(dir, text);
  const std::string log = dir.path() + "/out.log";
  ChildProcess bad({EMBER_BINARY, "cluster", "--config", config}, log);
  EXPECT_EQ(bad.WaitExit(seconds(20)), 2);
  EXPECT_NE(testing::ReadFile(log).find("learing_rate"), std::string::npos)
      << testing::ReadFile(log);
}

TEST(ClusterProcessTest, SeparateProcessesTrainAndTheLossFalls) {
  testing::TempDir dir;
  const std::string config = WriteConfig(dir, kSmallConfig);
  const std::string log = dir.path() + "/cluster.log";
  ServerProcesses servers(dir, config, log);
  const std::string& endpoint = servers.endpoint();
  ASSERT_FALSE(endpoint.empty()) << testing::ReadFile(log);
  const std::string summary = dir.path() + "/summary.json";
  ChildProcess trainer({EMBER_BINARY, "train", "--config", config, "--scheduler", endpoint,
                        "--summary-json", summary},
                       log);
  ASSERT_EQ(trainer.WaitExit(seconds(300)), 0) << testing::ReadFile(log);
  const std::string json = testing::ReadFile(summary);
  const double start = JsonNumber(json, "loss_start");
  const double end = JsonNumber(json, "loss_end");
  EXPECT_LT(end, 0.85 * start) << json;
  EXPECT_EQ(JsonNumber(json, "steps"), 300);
  // Both shards hold rows.
  std::smatch match;
  std::string rest = json;
  int shards_with_rows = 0;
  std::regex rows("\"rows\": ([0-9]+)");
  while (std::regex_search(rest, match, rows)) {
    if (std::stoull(match[1]) > 0) ++shards_with_rows;
    rest = match.suffix();
  }
  EXPECT_EQ(shards_with_rows, 2) << json;
  EXPECT_TRUE(servers.running());
}

// `ember cluster --serve` serves until stopped and says where to connect; a trainer started apart
// trains against it while `ember status --watch` refreshes its view.
TEST(ClusterProcessTest, AServingClusterTrainsAStrayTrainerWhileStatusWatches) {
  testing::TempDir dir;
  const std::string config = WriteConfig(dir, kSmallConfig);
  const std::string info_file = dir.path() + "/cluster.json";
  const std::string log = dir.path() + "/cluster.log";
  ChildProcess cluster(
      {EMBER_BINARY, "cluster", "--config", config, "--serve", "--info-file", info_file}, log);
  const std::string text = WaitForFile(info_file, seconds(60));
  ASSERT_FALSE(text.empty()) << testing::ReadFile(log);
  const nlohmann::json info = nlohmann::json::parse(text);
  const std::vector<std::string> connect = {
      "--scheduler", info["scheduler"].get<std::string>(), "--key", info["key"].get<std::string>(),
      "--scheduler-key", info["scheduler_key"].get<std::string>()};
  auto command = [&](std::vector<std::string> args) {
    args.insert(args.end(), connect.begin(), connect.end());
    return args;
  };
  ChildProcess trainer(command({EMBER_BINARY, "train", "--config", config, "--steps", "150"}),
                       log);
  const std::string watch_log = dir.path() + "/watch.log";
  ChildProcess watch(
      command({EMBER_BINARY, "status", "--watch", "--every", "0.3", "--count", "4"}), watch_log);
  ASSERT_EQ(watch.WaitExit(seconds(60)), 0) << testing::ReadFile(watch_log);
  const std::string frames = testing::ReadFile(watch_log);
  size_t count = 0;
  for (size_t at = frames.find("ember status at "); at != std::string::npos;
       at = frames.find("ember status at ", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 4u) << frames;
  EXPECT_NE(frames.find("pulled keys/s"), std::string::npos) << frames;
  EXPECT_EQ(frames.find("\033["), std::string::npos) << "not a terminal: no escapes";
  ASSERT_EQ(trainer.WaitExit(seconds(300)), 0) << testing::ReadFile(log);
  // Still serving after the trainer left; SIGTERM is its normal end.
  EXPECT_TRUE(cluster.running());
  cluster.Signal(SIGTERM);
  EXPECT_EQ(cluster.WaitExit(seconds(30)), 0) << testing::ReadFile(log);
}

// Pipelined training learns; --log-jsonl has a line per progress window, then the summary.
TEST(ClusterProcessTest, PipelinedTrainingLearnsAndLogsEveryWindow) {
  testing::TempDir dir;
  const std::string config = WriteConfig(dir, kSmallConfig);
  const std::string summary = dir.path() + "/summary.json";
  const std::string run_log = dir.path() + "/run.jsonl";
  const std::string log = dir.path() + "/cluster.log";
  ChildProcess cluster({EMBER_BINARY, "cluster", "--config", config, "--pipeline",
                        "--summary-json", summary, "--log-jsonl", run_log},
                       log);
  ASSERT_EQ(cluster.WaitExit(seconds(300)), 0) << testing::ReadFile(log);
  const std::string json = testing::ReadFile(summary);
  EXPECT_LT(JsonNumber(json, "loss_end"), 0.85 * JsonNumber(json, "loss_start")) << json;
  const std::string printed = testing::ReadFile(log);
  EXPECT_NE(printed.find("busy"), std::string::npos);
  EXPECT_NE(printed.find("eta 0s"), std::string::npos) << printed;

  std::istringstream lines(testing::ReadFile(run_log));
  std::vector<nlohmann::json> windows;
  nlohmann::json last;
  for (std::string line; std::getline(lines, line);) {
    last = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(last.is_discarded()) << line;
    if (last["kind"] == "window") windows.push_back(last);
  }
  ASSERT_EQ(windows.size(), 10u);  // 300 steps, a window every 30
  for (size_t i = 0; i < windows.size(); ++i) {
    EXPECT_EQ(windows[i]["step"], 30 * (i + 1));
    EXPECT_EQ(windows[i]["steps"], 300);
    EXPECT_GT(windows[i]["samples_per_second"].get<double>(), 0);
    EXPECT_GE(windows[i]["eta_s"].get<double>(), 0);
  }
  EXPECT_EQ(windows.back()["eta_s"].get<double>(), 0);
  EXPECT_GT(windows.front()["eta_s"].get<double>(), 0);
  EXPECT_EQ(last["kind"], "summary");
  const nlohmann::json record = nlohmann::json::parse(json);
  EXPECT_EQ(last["steps"], record["steps"]);
  EXPECT_EQ(last["loss_end"], record["loss_end"]);
}

// `ember checkpoint` against a training run of separate processes, then `ember export` of it.
TEST(ClusterProcessTest, CheckpointARunningJobAndExportIt) {
  testing::TempDir dir;
  const std::string config = WriteConfig(dir, kSmallConfig);
  const std::string log = dir.path() + "/cluster.log";
  ServerProcesses servers(dir, config, log);
  ASSERT_FALSE(servers.endpoint().empty()) << testing::ReadFile(log);
  ChildProcess trainer({EMBER_BINARY, "train", "--config", config, "--scheduler",
                        servers.endpoint(), "--steps", "100000"},
                       log);
  const std::string cut = dir.path() + "/now";
  const std::string out = dir.path() + "/checkpoint.out";
  int code = -1;
  for (int attempt = 0; attempt < 100 && code != 0; ++attempt) {  // until a step has completed
    ChildProcess request({EMBER_BINARY, "checkpoint", "--scheduler", servers.endpoint(), "--dir",
                          cut, "--timeout-s", "60"},
                         out);
    code = request.WaitExit(seconds(90));
    if (code != 0) std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_EQ(code, 0) << testing::ReadFile(out) << testing::ReadFile(log);
  EXPECT_NE(testing::ReadFile(out).find("checkpoint after step"), std::string::npos);
  EXPECT_TRUE(trainer.running()) << testing::ReadFile(log);  // training went on
  trainer.Stop();

  const std::string status_out = dir.path() + "/status.out";
  ChildProcess status({EMBER_BINARY, "status", "--scheduler", servers.endpoint()}, status_out);
  ASSERT_EQ(status.WaitExit(seconds(30)), 0) << testing::ReadFile(status_out);
  const std::string table = testing::ReadFile(status_out);
  EXPECT_NE(table.find("routing epoch 1, 64 partitions, 2 servers"), std::string::npos) << table;
  EXPECT_EQ(std::regex_search(table, std::regex("\\n1 +tcp://127\\.0\\.0\\.1:[0-9]+ +live +32 +[1-9]")),
            true)
      << table;

  const std::string exported = dir.path() + "/export";
  ChildProcess exporter({EMBER_BINARY, "export", "--checkpoint", cut, "--out", exported}, log);
  ASSERT_EQ(exporter.WaitExit(seconds(60)), 0) << testing::ReadFile(log);
  for (const char* file : {"/u0.keys.npy", "/i1.rows.npy", "/dense/user.0.weight.npy",
                           "/dense/item.2.bias.npy"}) {
    EXPECT_TRUE(std::filesystem::exists(exported + file)) << file;
  }
  EXPECT_TRUE(servers.running());
}

// Periodic checkpoints of `ember cluster`, and a second cluster resuming from the newest one.
TEST(ClusterProcessTest, PeriodicCheckpointsAndResume) {
  testing::TempDir dir;
  const std::string config = WriteConfig(dir, kSmallConfig);
  const std::string log = dir.path() + "/cluster.log";
  const std::string checkpoints = dir.path() + "/checkpoints";
  ChildProcess first({EMBER_BINARY, "cluster", "--config", config, "--steps", "40",
                      "--checkpoint-every", "15", "--checkpoint-dir", checkpoints},
                     log);
  ASSERT_EQ(first.WaitExit(seconds(300)), 0) << testing::ReadFile(log);
  EXPECT_TRUE(std::filesystem::exists(checkpoints + "/step-000000015/MANIFEST"));
  EXPECT_TRUE(std::filesystem::exists(checkpoints + "/step-000000030/MANIFEST"));

  const std::string summary = dir.path() + "/resumed.json";
  const std::string resumed_log = dir.path() + "/resumed.log";
  ChildProcess second({EMBER_BINARY, "cluster", "--config", config, "--steps", "40", "--restore",
                       checkpoints, "--summary-json", summary},
                      resumed_log);
  ASSERT_EQ(second.WaitExit(seconds(300)), 0) << testing::ReadFile(resumed_log);
  EXPECT_NE(testing::ReadFile(resumed_log).find("step-000000030 after step 30"),
            std::string::npos)
      << testing::ReadFile(resumed_log);
  EXPECT_EQ(JsonNumber(testing::ReadFile(summary), "steps"), 10);
}

// `ember status` output: server `id`'s partition count (-1 when the line is missing).
int PartitionsOf(const std::string& status, int id) {
  std::smatch match;
  std::regex line("\\n" + std::to_string(id) + " +tcp://[0-9.:]+ +[a-z]+ +([0-9]+)");
  return std::regex_search(status, match, line) ? std::stoi(match[1]) : -1;
}

std::string StatusOf(const testing::TempDir& dir, const std::string& endpoint) {
  const std::string out = dir.path() + "/status.out";
  std::filesystem::remove(out);  // the child appends to it
  ChildProcess status({EMBER_BINARY, "status", "--scheduler", endpoint}, out);
  return status.WaitExit(seconds(30)) == 0 ? testing::ReadFile(out) : "";
}

// A joining server killed in the middle of its moves leaves the old owners serving everything;
// started again on its data directory it takes its id back and its moves complete.
TEST(ClusterProcessTest, AMoveInterruptedByKillingTheTargetIsRetried) {
  testing::TempDir dir;
  const std::string config = WriteConfig(dir, kSmallConfig);
  const std::string log = dir.path() + "/cluster.log";
  ServerProcesses servers(dir, config, log);
  ASSERT_FALSE(servers.endpoint().empty()) << testing::ReadFile(log);
  auto train = [&](const char* steps) {
    ChildProcess trainer({EMBER_BINARY, "train", "--config", config, "--scheduler",
                          servers.endpoint(), "--steps", steps},
                         log);
    return trainer.WaitExit(seconds(120));
  };
  ASSERT_EQ(train("20"), 0) << testing::ReadFile(log);  // rows to move

  const std::string data = dir.path() + "/joiner";
  auto joiner = std::make_unique<ChildProcess>(
      std::vector<std::string>{EMBER_BINARY, "server", "--scheduler", servers.endpoint(), "--join",
                               "--threads", "1", "--data-dir", data, "--move-bandwidth", "1000"},
      log);
  std::string status;
  for (int i = 0; i < 100 && PartitionsOf(status, 2) < 0; ++i) {
    std::this_thread::sleep_for(milliseconds(50));
    status = StatusOf(dir, servers.endpoint());
  }
  ASSERT_EQ(PartitionsOf(status, 2), 0) << status << testing::ReadFile(log);
  std::this_thread::sleep_for(milliseconds(500));  // copying, paced: ~10 s per partition
  joiner->Signal(SIGKILL);
  joiner->WaitExit(seconds(10));
  status = StatusOf(dir, servers.endpoint());
  EXPECT_EQ(PartitionsOf(status, 0) + PartitionsOf(status, 1), 64) << status;
  ASSERT_EQ(train("5"), 0) << testing::ReadFile(log);  // every partition still served

  joiner = std::make_unique<ChildProcess>(
      std::vector<std::string>{EMBER_BINARY, "server", "--scheduler", servers.endpoint(),
                               "--threads", "1", "--data-dir", data},
      log);
  for (int i = 0; i < 600; ++i) {
    status = StatusOf(dir, servers.endpoint());
    if (status.find("0 in flight, 0 planned") != std::string::npos &&
        PartitionsOf(status, 2) == 21) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  EXPECT_EQ(PartitionsOf(status, 2), 21) << status << testing::ReadFile(log);
  EXPECT_EQ(PartitionsOf(status, 0) + PartitionsOf(status, 1), 43) << status;
  ASSERT_EQ(train("5"), 0) << testing::ReadFile(log);
  EXPECT_TRUE(servers.running());
}

// Network namespaces made by the test: a bridge in this namespace (10.213.0.254) and one
// namespace per host, each with its own address 10.213.0.<i+1>; removed on destruction.
class TestHosts {
 public:
  explicit TestHosts(int hosts) {
    prefix_ = "emb" + std::to_string(::getpid() % 100000);
    bridge_ = prefix_ + "br";
    ok_ = Run("ip link add " + bridge_ + " type bridge") &&
          Run("ip addr add 10.213.0.254/24 dev " + bridge_) && Run("ip link set " + bridge_ + " up");
    for (int i = 0; ok_ && i < hosts; ++i) {
      const std::string ns = Namespace(i), veth = prefix_ + "v" + std::to_string(i);
      namespaces_.push_back(ns);
      ok_ = Run("ip netns add " + ns) &&
            Run("ip link add " + veth + " type veth peer name eth0 netns " + ns) &&
            Run("ip link set " + veth + " master " + bridge_ + " up") &&
            Run("ip netns exec " + ns + " ip addr add " + Address(i) + "/24 dev eth0") &&
            Run("ip netns exec " + ns + " ip link set eth0 up") &&
            Run("ip netns exec " + ns + " ip link set lo up");
    }
  }
  ~TestHosts() {
    for (const std::string& ns : namespaces_) Run("ip netns del " + ns + " 2>/dev/null");
    Run("ip link del " + bridge_ + " 2>/dev/null");
  }
  bool ok() const { return ok_; }
  std::string Namespace(int i) const { return prefix_ + "h" + std::to_string(i); }
  static std::string Address(int i) { return "10.213.0." + std::to_string(i + 1); }
  // `args` run inside host i's namespace.
  std::vector<std::string> On(int i, std::vector<std::string> args) const {
    const std::string ip =
        std::filesystem::exists("/usr/sbin/ip") ? "/usr/sbin/ip" : std::string("/sbin/ip");
    args.insert(args.begin(), {ip, "netns", "exec", Namespace(i)});
    return args;
  }

 private:
  static bool Run(const std::string& command) {
    return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
  }
  std::string prefix_, bridge_;
  std::vector<std::string> namespaces_;
  bool ok_ = false;
};

// Makes key pairs for `names` under DIR/keys with `ember keygen`, and returns the small config
// with a security section trusting them (keys named ROLE-*, scheduler.pub the scheduler's).
std::string WriteAuthenticatedConfig(const testing::TempDir& dir,
                                     const std::vector<std::string>& names) {
  std::vector<std::string> args = {EMBER_BINARY, "keygen", "--out", dir.path() + "/keys"};
  args.insert(args.end(), names.begin(), names.end());
  ChildProcess keygen(args, dir.path() + "/keygen.log");
  EXPECT_EQ(keygen.WaitExit(seconds(30)), 0) << testing::ReadFile(dir.path() + "/keygen.log");
  return WriteConfig(dir, std::string(kSmallConfig) + "security:\n  keyring: keys\n");
}

// Nothing assumes one host: the scheduler here, two servers and the trainer each in its own
// network namespace with its own address (one server bound to all of its interfaces, advertising
// its address), and a third server joining from a fourth; every connection authenticated with
// keys from `ember keygen`.
TEST(ClusterProcessTest, ServersAndTrainerOnSeparateHostsInNetworkNamespaces) {
  if (::geteuid() != 0) GTEST_SKIP() << "creating network namespaces needs root";
  TestHosts hosts(4);
  if (!hosts.ok()) GTEST_SKIP() << "cannot create network namespaces with veth pairs here";
  testing::TempDir dir;
  const std::string config = WriteAuthenticatedConfig(
      dir, {"scheduler", "server-0", "server-1", "server-2", "trainer-0"});
  const std::string keys = dir.path() + "/keys/";
  const std::string log = dir.path() + "/cluster.log";
  const std::string endpoint_file = dir.path() + "/scheduler";
  // Without keys, the scheduler refuses the non-loopback address and says how to make keys.
  const std::string plain_config = dir.path() + "/plain.yaml";
  std::ofstream(plain_config) << kSmallConfig;
  ChildProcess open_scheduler(
      {EMBER_BINARY, "scheduler", "--config", plain_config, "--bind", "tcp://10.213.0.254:*"}, log);
  EXPECT_NE(open_scheduler.WaitExit(seconds(20)), 0);
  EXPECT_NE(testing::ReadFile(log).find("ember keygen"), std::string::npos)
      << testing::ReadFile(log);

  ChildProcess scheduler({EMBER_BINARY, "scheduler", "--config", config, "--key",
                          keys + "scheduler.key", "--bind", "tcp://10.213.0.254:*",
                          "--endpoint-file", endpoint_file},
                         log);
  std::string endpoint = WaitForFile(endpoint_file, seconds(20));
  ASSERT_FALSE(endpoint.empty()) << testing::ReadFile(log);
  endpoint.erase(endpoint.find_last_not_of("\n") + 1);
  auto server = [&](int host, int id, std::vector<std::string> extra) {
    std::vector<std::string> args = {EMBER_BINARY, "server", "--config", config, "--key",
                                     keys + "server-" + std::to_string(id) + ".key",
                                     "--scheduler", endpoint, "--threads", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<ChildProcess>(hosts.On(host, args), log);
  };
  auto bind_to = [](int host) {
    return std::vector<std::string>{"--bind", "tcp://" + TestHosts::Address(host) + ":*"};
  };
  auto train = [&](const char* steps) {
    return std::make_unique<ChildProcess>(
        hosts.On(2, {EMBER_BINARY, "train", "--config", config, "--key", keys + "trainer-0.key",
                     "--scheduler", endpoint, "--steps", steps}),
        log);
  };
  std::vector<std::unique_ptr<ChildProcess>> servers;
  servers.push_back(server(0, 0, bind_to(0)));
  // Server 1 binds every interface of its host and advertises the address the others reach.
  servers.push_back(
      server(1, 1, {"--bind", "tcp://0.0.0.0:*", "--advertise", TestHosts::Address(1)}));
  auto trainer = train("60");
  // The joiner starts once both servers registered, so that it cannot take one of their places.
  for (int i = 0; i < 600; ++i) {
    const std::string text = testing::ReadFile(log);
    if (text.find("registered at tcp://10.213.0.1:") != std::string::npos &&
        text.find("registered at tcp://10.213.0.2:") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  std::vector<std::string> joiner = bind_to(3);
  joiner.push_back("--join");
  servers.push_back(server(3, 2, joiner));
  ASSERT_EQ(trainer->WaitExit(seconds(120)), 0) << testing::ReadFile(log);
  // The joiner's share moves over the namespaces' network; then a trainer reads from all three.
  for (int i = 0; i < 600; ++i) {
    if (testing::ReadFile(log).find("every planned move is done") != std::string::npos) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_EQ(train("5")->WaitExit(seconds(120)), 0) << testing::ReadFile(log);
  const std::string text = testing::ReadFile(log);
  EXPECT_NE(text.find("registered at tcp://10.213.0.1:"), std::string::npos) << text;
  EXPECT_NE(text.find("registered at tcp://10.213.0.2:"), std::string::npos) << text;
  EXPECT_NE(text.find("(bound at tcp://0.0.0.0:"), std::string::npos) << text;
  EXPECT_NE(text.find("joined at tcp://10.213.0.4:"), std::string::npos) << text;
  EXPECT_NE(text.find("every planned move is done"), std::string::npos) << text;
  EXPECT_NE(text.find("3 servers, 64 partitions"), std::string::npos) << text;
  for (auto& process : servers) EXPECT_TRUE(process->running());
  for (auto& process : servers) process->Stop();  // before the namespaces go
}

// On loopback with keys: tools connect with an admin key; a trainer key cannot drain, a stranger's
// key and no key at all get no answer, and the cluster keeps serving.
TEST(ClusterProcessTest, AuthenticatedClusterRefusesStrangersAndChecksRoles) {
  testing::TempDir dir;
  const std::string config =
      WriteAuthenticatedConfig(dir, {"scheduler", "server-0", "server-1", "trainer-0", "admin"});
  const std::string keys = dir.path() + "/keys/";
  {
    ChildProcess stranger({EMBER_BINARY, "keygen", "--out", dir.path(), "stranger"},
                          dir.path() + "/keygen.log");
    ASSERT_EQ(stranger.WaitExit(seconds(30)), 0);
  }
  const std::string log = dir.path() + "/cluster.log";
  const std::string endpoint_file = dir.path() + "/scheduler";
  std::vector<std::unique_ptr<ChildProcess>> processes;
  processes.push_back(std::make_unique<ChildProcess>(
      std::vector<std::string>{EMBER_BINARY, "scheduler", "--config", config, "--key",
                               keys + "scheduler.key", "--endpoint-file", endpoint_file},
      log));
  std::string endpoint = WaitForFile(endpoint_file, seconds(20));
  ASSERT_FALSE(endpoint.empty()) << testing::ReadFile(log);
  endpoint.erase(endpoint.find_last_not_of("\n") + 1);
  for (int i = 0; i < 2; ++i) {
    processes.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{EMBER_BINARY, "server", "--config", config, "--key",
                                 keys + "server-" + std::to_string(i) + ".key", "--scheduler",
                                 endpoint, "--threads", "1"},
        log));
  }
  ChildProcess trainer({EMBER_BINARY, "train", "--config", config, "--key",
                        keys + "trainer-0.key", "--scheduler", endpoint, "--steps", "30"},
                       log);
  ASSERT_EQ(trainer.WaitExit(seconds(120)), 0) << testing::ReadFile(log);

  const std::string scheduler_key = keys + "scheduler.pub";
  auto tool = [&](std::vector<std::string> args, const std::string& key, const std::string& out) {
    args.insert(args.begin(), EMBER_BINARY);
    args.insert(args.end(), {"--scheduler", endpoint, "--scheduler-key", scheduler_key});
    if (!key.empty()) args.insert(args.end(), {"--key", key});
    ChildProcess process(args, out);
    return process.WaitExit(seconds(60));
  };
  const std::string out = dir.path() + "/tool.out";
  EXPECT_EQ(tool({"status"}, keys + "admin.key", out), 0) << testing::ReadFile(out);
  EXPECT_NE(testing::ReadFile(out).find("2 servers"), std::string::npos) << testing::ReadFile(out);

  const std::string drain_out = dir.path() + "/drain.out";
  EXPECT_NE(tool({"drain", "--server", "1"}, keys + "trainer-0.key", drain_out), 0);
  EXPECT_NE(testing::ReadFile(drain_out).find("'drain' request needs the role admin"),
            std::string::npos)
      << testing::ReadFile(drain_out);

  const std::string stranger_out = dir.path() + "/stranger.out";
  EXPECT_NE(tool({"status"}, dir.path() + "/stranger.key", stranger_out), 0);
  const std::string keyless_out = dir.path() + "/keyless.out";
  EXPECT_NE(tool({"status"}, "", keyless_out), 0);
  EXPECT_NE(testing::ReadFile(log).find("is not trusted"), std::string::npos)
      << testing::ReadFile(log);

  // Nothing changed: both servers still serve, and the admin still gets answers.
  EXPECT_EQ(tool({"status"}, keys + "admin.key", out), 0) << testing::ReadFile(out);
  EXPECT_NE(testing::ReadFile(out).find("2 servers"), std::string::npos) << testing::ReadFile(out);
  for (auto& process : processes) EXPECT_TRUE(process->running());
}

TEST(ClusterProcessTest, ShippedConfigsLoad) {
  for (const char* name : {"tt-bench.yaml", "tt-bench-gpu.yaml", "movielens-100k.yaml",
                           "movielens-100k-features.yaml"}) {
    auto config = local::LoadClusterConfig(std::string(EMBER_SOURCE_DIR) + "/configs/" + name);
    EXPECT_TRUE(config.ok()) << name << ": " << config.status().ToString();
  }
}

// Pids of the live children of `parent`, from /proc.
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = testing::ReadFile(entry.path().string() + "/stat");
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent &&
        state != 'Z') {
      children.push_back(std::stoi(name));
    }
  }
  return children;
}

// `ember cluster --data-dir` gives each server its own RocksDB directory, so a memory budget far
// below the rows the run creates works through the cluster command too.
TEST(ClusterProcessTest, ClusterServersKeepRowsUnderADataDirectory) {
  testing::TempDir dir;
  const std::string config = WriteConfig(dir, kSmallConfig);
  const std::string log = dir.path() + "/cluster.log";
  const std::string data = dir.path() + "/data";
  ChildProcess cluster({EMBER_BINARY, "cluster", "--config", config, "--steps", "60",
                        "--data-dir", data, "--memory-budget", "100000"},
                       log);
  ASSERT_EQ(cluster.WaitExit(seconds(300)), 0) << testing::ReadFile(log);
  for (const char* server : {"/server-0", "/server-1"}) {
    EXPECT_TRUE(std::filesystem::exists(data + server + "/rows/CURRENT")) << server;
  }
}

TEST(ClusterProcessTest, ClusterStopsEveryProcessOnSigterm) {
  testing::TempDir dir;
  const std::string config = WriteConfig(dir, kSmallConfig);
  const std::string log = dir.path() + "/cluster.log";
  ChildProcess cluster({EMBER_BINARY, "cluster", "--config", config, "--steps", "1000000"}, log);
  // Wait until the trainer reports progress: then all four children are up.
  const auto deadline = std::chrono::steady_clock::now() + seconds(120);
  while (testing::ReadFile(log).find("step ") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline && cluster.running()) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_TRUE(cluster.running()) << testing::ReadFile(log);
  const std::vector<pid_t> children = ChildrenOf(cluster.pid());
  EXPECT_EQ(children.size(), 4u);  // scheduler, 2 servers, trainer
  cluster.Signal(SIGTERM);
  EXPECT_GE(cluster.WaitExit(seconds(30)), 0);
  for (pid_t child : children) {
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
      gone = kill(child, 0) != 0 ||
             testing::ReadFile("/proc/" + std::to_string(child) + "/stat").find(") Z") !=
                 std::string::npos;
      if (!gone) std::this_thread::sleep_for(milliseconds(50));
    }
    EXPECT_TRUE(gone) << "child " << child << " outlived the cluster";
    if (!gone) kill(child, SIGKILL);
  }
}

// Waits until `log` holds `text`, the process is gone, or `timeout` passed; true when found.
bool WaitForLogLine(ChildProcess& process, const std::string& log, const std::string& text,
                    milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline && process.running()) {
    if (testing::ReadFile(log).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return testing::ReadFile(log).find(text) != std::string::npos;
}

// A trainer killed with SIGKILL in the middle of a bsp run of two: the scheduler notices its
// silence, and per train.on_trainer_failure the other trainer either stops with an error naming
// the dead one or finishes its steps alone. Either way nothing hangs.
class TrainerKilledTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TrainerKilledTest, TheRunStopsOrGoesOnAndNeverHangs) {
  const std::string policy = GetParam();
  testing::TempDir dir;
  std::string text = kSmallConfig;
  text.replace(text.find("  servers: 2\n"), 12, "  servers: 2\n  trainers: 2\n");
  text.replace(text.find("  steps: 300\n"), 13,
               "  steps: 300\n  mode: bsp\n  on_trainer_failure: " + policy +
                   "\n  trainer_timeout_ms: 1000\n  clock_timeout_ms: 60000\n");
  const std::string config = WriteConfig(dir, text);
  const std::string log = dir.path() + "/cluster.log";
  const std::string victim_log = dir.path() + "/victim.log";
  const std::string survivor_log = dir.path() + "/survivor.log";
  ServerProcesses servers(dir, config, log);
  const std::string& endpoint = servers.endpoint();
  ASSERT_FALSE(endpoint.empty()) << testing::ReadFile(log);
  const std::string summary = dir.path() + "/survivor.json";
  ChildProcess survivor({EMBER_BINARY, "train", "--config", config, "--scheduler", endpoint,
                         "--rank", "0", "--name", "survivor", "--summary-json", summary},
                        survivor_log);
  ChildProcess victim({EMBER_BINARY, "train", "--config", config, "--scheduler", endpoint,
                       "--rank", "1", "--name", "victim"},
                      victim_log);
  // Kill the victim once it has trained a few windows (a progress line per 30 steps).
  ASSERT_TRUE(WaitForLogLine(victim, victim_log, "step ", seconds(120)))
      << testing::ReadFile(victim_log) << testing::ReadFile(log);
  ASSERT_TRUE(victim.running()) << testing::ReadFile(victim_log);
  victim.Signal(SIGKILL);
  EXPECT_GE(victim.WaitExit(seconds(10)), 0);

  const int code = survivor.WaitExit(seconds(120));
  ASSERT_GE(code, 0) << "the surviving trainer hung\n" << testing::ReadFile(survivor_log);
  const std::string scheduler_log = testing::ReadFile(log);
  EXPECT_NE(scheduler_log.find("('victim') is gone"), std::string::npos)
      << scheduler_log;
  if (policy == "continue") {
    EXPECT_EQ(code, 0) << testing::ReadFile(survivor_log);
    EXPECT_EQ(JsonNumber(testing::ReadFile(summary), "steps"), 300);
  } else {
    EXPECT_NE(code, 0);
    const std::string said = testing::ReadFile(survivor_log);
    EXPECT_NE(said.find("'victim'"), std::string::npos) << said;
    EXPECT_NE(said.find("on_trainer_failure: stop"), std::string::npos) << said;
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, TrainerKilledTest, ::testing::Values("stop", "continue"));

TEST(ClusterProcessTest, MovieLens100kBeatsMostPopular) {
  const std::string data_root = testing::SharedDataDir();
  if (!std::filesystem::exists(data_root + "/ml-100k/u.data")) {
    GTEST_SKIP() << "MovieLens 100K not found under " << data_root;
  }
  testing::TempDir dir;
  const std::string summary = dir.path() + "/summary.json";
  const std::string log = dir.path() + "/cluster.log";
  ChildProcess cluster({EMBER_BINARY, "cluster", "--config",
                        std::string(EMBER_SOURCE_DIR) + "/configs/movielens-100k.yaml",
                        "--data-root", data_root, "--backend", "cpu", "--summary-json", summary},
                       log);
  ASSERT_EQ(cluster.WaitExit(seconds(900)), 0) << testing::ReadFile(log);
  const std::string text = testing::ReadFile(summary);
  const nlohmann::json eval = nlohmann::json::parse(text, nullptr, false).value("eval", nlohmann::json());
  ASSERT_TRUE(eval.is_object()) << text;
  const double hr = eval.value("hit_rate", 0.0);
  const double popular = eval.value("popularity_hit_rate", 0.0);
  EXPECT_GT(popular, 0.3) << text;
  EXPECT_GT(hr, popular) << text;
  EXPECT_EQ(eval["warm"].value("users", 0) + eval["cold"].value("users", 0),
            eval.value("users", 0)) << text;
  EXPECT_GT(eval.value("hit_rate_se", 0.0), 0.0) << text;
  EXPECT_LT(eval.value("hit_rate_se", 1.0), 0.03) << text;
  std::printf("ml-100k: HR@10 %.4f ± %.4f NDCG@10 %.4f ± %.4f, ties %.4f, %d items recommended; "
              "most-popular HR@10 %.4f NDCG@10 %.4f\n",
              hr, eval.value("hit_rate_se", 0.0), eval.value("ndcg", 0.0),
              eval.value("ndcg_se", 0.0), eval.value("tie_fraction", 0.0),
              eval.value("items_recommended", 0), popular, eval.value("popularity_ndcg", 0.0));
}

}  // namespace
}  // namespace ember
