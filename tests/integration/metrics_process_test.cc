// End-to-end: every role's Prometheus endpoint (--metrics-bind) on a cluster of real processes,
// scraped over HTTP with python3's urllib and checked with `promtool check metrics`; and the
// errors of a bad or taken --metrics-bind.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/child_process.h"
#include "tests/test_util.h"

namespace ember {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Two servers, one trainer with a progress window every 2 steps and steps enough to still be
// training while it is scraped.
constexpr const char* kConfig = R"(
cluster:
  servers: 2
  server_threads: 1
  partitions: 64
tables:
  - {name: u0, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}
  - {name: i0, dim: 8, optimizer: {kind: adagrad, learning_rate: 0.05}}
model:
  embedding_dim: 8
  user_slots: 1
  item_slots: 1
  hidden: [16]
  output_dim: 8
  temperature: 0.1
  learning_rate: 0.003
data:
  kind: synthetic
  synthetic: {user_slots: 1, item_slots: 1, vocabulary: 2000, exponent: 1.05, seed: 3,
              num_clusters: 8, signal: 0.95}
train:
  steps: 1000000
  batch_size: 64
  backend: cpu
  log_every: 2
  user_tables: [u0]
  item_tables: [i0]
)";

std::string WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

// Waits (bounded) until `pattern`'s first group appears in the file at `path`.
std::string WaitForMatch(const std::string& path, const std::regex& pattern, seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch match;
    const std::string text = testing::ReadFile(path);
    if (std::regex_search(text, match, pattern)) return match[1];
    std::this_thread::sleep_for(milliseconds(50));
  }
  return "";
}

// The URL a process logged it serves metrics at.
std::string MetricsUrl(const std::string& log) {
  static const std::regex kServing("serving Prometheus metrics at (http://[0-9.]+:[0-9]+/metrics)");
  return WaitForMatch(log, kServing, seconds(60));
}

// Runs a shell command; its exit code, its output in *out.
int Run(const std::string& command, std::string* out) {
  out->clear();
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) out->append(buffer, n);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// GET `url` with a real HTTP client (python3's urllib; CI has python3, not always curl).
std::string Scrape(const std::string& url) {
  std::string body;
  const int code =
      Run("python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request."
          "urlopen(sys.argv[1], timeout=10).read().decode())' '" +
              url + "'",
          &body);
  return code == 0 ? body : "";
}

// The value of the sample `series` (name with its labels, as exposed), or -1 when absent.
double Sample(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

bool HavePromtool() { return std::system("command -v promtool > /dev/null 2>&1") == 0; }

// `promtool check metrics` on a scrape: its exit code, its complaints in *out.
int Promtool(const testing::TempDir& dir, const std::string& name, const std::string& scrape,
             std::string* out) {
  const std::string path = WriteFile(dir.path() + "/" + name + ".prom", scrape);
  return Run("promtool check metrics < '" + path + "'", out);
}

TEST(MetricsProcessTest, EveryRoleServesPrometheusMetricsThatPromtoolAccepts) {
  testing::TempDir dir;
  const std::string config = WriteFile(dir.path() + "/job.yaml", kConfig);
  const std::string any_port = "127.0.0.1:0";
  const std::string endpoint_file = dir.path() + "/scheduler";
  const std::string scheduler_log = dir.path() + "/scheduler.log";
  std::vector<std::unique_ptr<ChildProcess>> processes;  // stopped by PID, also on failure
  processes.push_back(std::make_unique<ChildProcess>(
      std::vector<std::string>{EMBER_BINARY, "scheduler", "--config", config, "--endpoint-file",
                               endpoint_file, "--metrics-bind", any_port},
      scheduler_log));
  std::string endpoint = WaitForMatch(endpoint_file, std::regex("(\\S+)"), seconds(30));
  ASSERT_FALSE(endpoint.empty()) << testing::ReadFile(scheduler_log);
  std::vector<std::string> server_logs;
  for (int i = 0; i < 2; ++i) {
    server_logs.push_back(dir.path() + "/server-" + std::to_string(i) + ".log");
    processes.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{EMBER_BINARY, "server", "--scheduler", endpoint, "--threads", "1",
                                 "--metrics-bind", any_port},
        server_logs.back()));
  }
  const std::string trainer_log = dir.path() + "/trainer.log";
  processes.push_back(std::make_unique<ChildProcess>(
      std::vector<std::string>{EMBER_BINARY, "train", "--config", config, "--scheduler", endpoint,
                               "--metrics-bind", any_port},
      trainer_log));

  const std::string scheduler_url = MetricsUrl(scheduler_log);
  ASSERT_FALSE(scheduler_url.empty()) << testing::ReadFile(scheduler_log);
  const std::string trainer_url = MetricsUrl(trainer_log);
  ASSERT_FALSE(trainer_url.empty()) << testing::ReadFile(trainer_log);
  std::vector<std::string> server_urls;
  for (const std::string& log : server_logs) {
    server_urls.push_back(MetricsUrl(log));
    ASSERT_FALSE(server_urls.back().empty()) << testing::ReadFile(log);
  }

  // Until the trainer has completed a few steps (bounded).
  std::string trainer;
  const auto deadline = std::chrono::steady_clock::now() + seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    trainer = Scrape(trainer_url);
    if (Sample(trainer, "ember_trainer_step") >= 4) break;
    ASSERT_TRUE(processes.back()->running()) << testing::ReadFile(trainer_log);
    std::this_thread::sleep_for(milliseconds(200));
  }
  ASSERT_GE(Sample(trainer, "ember_trainer_step"), 4) << trainer << testing::ReadFile(trainer_log);
  EXPECT_GT(Sample(trainer, "ember_trainer_loss"), 0) << trainer;
  EXPECT_GT(Sample(trainer, "ember_trainer_samples_per_second"), 0) << trainer;
  EXPECT_GT(Sample(trainer, "ember_trainer_samples_total"), 0) << trainer;
  EXPECT_GE(Sample(trainer, "ember_trainer_phase_seconds_total{phase=\"compute\"}"), 0) << trainer;
  EXPECT_EQ(Sample(trainer, "ember_process_info{role=\"trainer\"}"), 1) << trainer;

  std::vector<std::string> servers;
  for (const std::string& url : server_urls) {
    servers.push_back(Scrape(url));
    const std::string& server = servers.back();
    EXPECT_GT(Sample(server, "ember_server_keys_pulled_total"), 0) << server;
    EXPECT_GT(Sample(server, "ember_server_keys_pushed_total"), 0) << server;
    EXPECT_GT(Sample(server, "ember_server_requests_total{kind=\"pull\"}"), 0) << server;
    EXPECT_GT(
        Sample(server, "ember_server_request_duration_seconds_bucket{kind=\"pull\",le=\"+Inf\"}"),
        0)
        << server;
    EXPECT_GT(Sample(server, "ember_server_table_rows{table=\"u0\"}"), 0) << server;
    EXPECT_GE(Sample(server, "ember_server_routing_epoch"), 1) << server;
    EXPECT_EQ(Sample(server, "ember_server_partitions_owned"), 32) << server;
    EXPECT_EQ(Sample(server, "ember_process_info{role=\"server\"}"), 1) << server;
  }

  const std::string scheduler = Scrape(scheduler_url);
  EXPECT_GE(Sample(scheduler, "ember_scheduler_routing_epoch"), 1) << scheduler;
  EXPECT_EQ(Sample(scheduler, "ember_scheduler_servers{state=\"live\"}"), 2) << scheduler;
  EXPECT_GE(Sample(scheduler, "ember_scheduler_trainers{state=\"live\"}"), 1) << scheduler;
  EXPECT_GE(Sample(scheduler, "ember_scheduler_trainer_clock_max"), 1) << scheduler;
  EXPECT_EQ(Sample(scheduler, "ember_scheduler_moves_done_total"), 0) << scheduler;
  EXPECT_EQ(Sample(scheduler, "ember_process_info{role=\"scheduler\"}"), 1) << scheduler;

  if (!HavePromtool()) GTEST_SKIP() << "promtool is not installed (Debian package prometheus)";
  std::string complaints;
  EXPECT_EQ(Promtool(dir, "scheduler", scheduler, &complaints), 0) << complaints;
  EXPECT_EQ(Promtool(dir, "trainer", trainer, &complaints), 0) << complaints;
  for (size_t i = 0; i < servers.size(); ++i) {
    EXPECT_EQ(Promtool(dir, "server-" + std::to_string(i), servers[i], &complaints), 0)
        << complaints;
  }
}

TEST(MetricsProcessTest, AMalformedMetricsBindIsRefusedNamingTheFlag) {
  testing::TempDir dir;
  const std::string log = dir.path() + "/out.log";
  ChildProcess server({EMBER_BINARY, "server", "--scheduler", "tcp://127.0.0.1:1", "--metrics-bind",
                       "127.0.0.1:http"},
                      log);
  EXPECT_EQ(server.WaitExit(seconds(20)), 2) << testing::ReadFile(log);
  EXPECT_NE(testing::ReadFile(log).find("--metrics-bind: '127.0.0.1:http'"), std::string::npos)
      << testing::ReadFile(log);
}

TEST(MetricsProcessTest, AMetricsPortInUseIsAnErrorNamingTheAddress) {
  testing::TempDir dir;
  const std::string config = WriteFile(dir.path() + "/job.yaml", kConfig);
  const std::string first_log = dir.path() + "/first.log";
  ChildProcess first(
      {EMBER_BINARY, "scheduler", "--config", config, "--metrics-bind", "127.0.0.1:0"}, first_log);
  const std::string url = MetricsUrl(first_log);
  ASSERT_FALSE(url.empty()) << testing::ReadFile(first_log);
  const std::string taken = url.substr(7, url.size() - 7 - 8);  // HOST:PORT
  const std::string log = dir.path() + "/second.log";
  ChildProcess second({EMBER_BINARY, "scheduler", "--config", config, "--metrics-bind", taken},
                      log);
  EXPECT_EQ(second.WaitExit(seconds(20)), 2) << testing::ReadFile(log);
  EXPECT_NE(testing::ReadFile(log).find("cannot serve metrics on " + taken), std::string::npos)
      << testing::ReadFile(log);
}

TEST(MetricsProcessTest, ABadMetricsConfigEntryIsRefusedNamingTheKey) {
  testing::TempDir dir;
  const std::string config = WriteFile(dir.path() + "/job.yaml",
                                       std::string(kConfig) + "metrics:\n  scheduler: nowhere\n");
  const std::string log = dir.path() + "/out.log";
  ChildProcess scheduler({EMBER_BINARY, "scheduler", "--config", config}, log);
  EXPECT_EQ(scheduler.WaitExit(seconds(20)), 2) << testing::ReadFile(log);
  EXPECT_NE(testing::ReadFile(log).find("metrics.scheduler"), std::string::npos)
      << testing::ReadFile(log);
}

}  // namespace
}  // namespace ember
