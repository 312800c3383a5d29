// `ember bench` end to end: a short run of the real binary writes every figure to its JSON record,
// and the report renders each figure it holds in both the table and the JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "bench/bench_report.h"
#include "common/child_process.h"
#include "tests/test_util.h"

namespace ember {
namespace {

using std::chrono::seconds;

// The text of the JSON object held under "key": {...} (no nested braces beyond one level).
std::string JsonObject(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\": {");
  if (at == std::string::npos) return "";
  size_t end = json.find('}', at);
  // An operation's object holds the latency object; skip past its closing brace.
  if (end != std::string::npos && json.substr(at, end - at).find("\"latency_ms\"") !=
                                      std::string::npos) {
    end = json.find('}', end + 1);
  }
  return end == std::string::npos ? "" : json.substr(at, end - at + 1);
}

// The number under "field", or NaN when it is missing or not a number.
double JsonNumber(const std::string& json, const std::string& field) {
  std::smatch match;
  const std::regex pattern("\"" + field + "\": ([-0-9.eE+]+)");
  if (!std::regex_search(json, match, pattern)) return std::nan("");
  return std::stod(match[1]);
}

// The numbers of the array under "field" (empty when it is missing).
std::vector<double> JsonNumbers(const std::string& json, const std::string& field) {
  std::smatch match;
  const std::regex pattern("\"" + field + "\": \\[([^\\]]*)\\]");
  if (!std::regex_search(json, match, pattern)) return {};
  std::vector<double> numbers;
  const std::string items = match[1];
  const std::regex number("[-0-9.eE+]+");
  for (auto it = std::sregex_iterator(items.begin(), items.end(), number);
       it != std::sregex_iterator(); ++it) {
    numbers.push_back(std::stod(it->str()));
  }
  return numbers;
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

TEST(BenchTest, ShortRunWritesEveryFigure) {
  testing::TempDir dir;
  const std::string json_path = dir.path() + "/bench.json";
  const std::string log = dir.path() + "/bench.log";
  ChildProcess bench({EMBER_BINARY, "bench", "--servers", "1", "--clients", "1",
                      "--keys-per-request", "1024", "--vocabulary", "100000", "--requests", "20",
                      "--rounds", "3", "--json", json_path},
                     log);
  ASSERT_EQ(bench.WaitExit(seconds(120)), 0) << testing::ReadFile(log);
  const std::string json = testing::ReadFile(json_path);
  ASSERT_FALSE(json.empty()) << testing::ReadFile(log);

  const std::string config = JsonObject(json, "config");
  for (const char* field : {"servers", "server_threads", "clients", "keys_per_request", "dim",
                            "learning_rate", "exponent", "vocabulary", "populate", "seed",
                            "requests", "seconds", "rounds"}) {
    EXPECT_GT(JsonNumber(config, field), 0) << field << " in " << config;
  }
  EXPECT_EQ(JsonNumber(config, "keys_per_request"), 1024);
  EXPECT_EQ(JsonNumber(config, "rounds"), 3);
  EXPECT_NE(config.find("\"optimizer\": \"adagrad\""), std::string::npos) << config;

  for (const char* operation : {"pull", "push"}) {
    const std::string figures = JsonObject(json, operation);
    ASSERT_FALSE(figures.empty()) << operation << " missing in " << json;
    for (const char* field : {"keys_per_second",
                              "gb_per_second",
                              "p50",
                              "p99",
                              "p999",
                              "server_cpu_seconds_per_million_keys",
                              "server_cpu_to_gather",
                              "client_cpu_seconds_per_million_keys",
                              "client_cpu_to_gather",
                              "server_worker_cpu_seconds_per_million_keys",
                              "raw_server_cpu_seconds_per_million_keys",
                              "raw_io_cpu_seconds_per_million_keys",
                              "raw_client_cpu_seconds_per_million_keys",
                              "server_floor_ns",
                              "server_floor_to_gather",
                              "keys_per_second_bound",
                              "server_floor_indexed_ns",
                              "server_floor_indexed_to_gather",
                              "keys_per_second_bound_indexed",
                              "raw_keys_per_second",
                              "ratio_to_raw",
                              "lookup_keys_per_second"}) {
      EXPECT_GT(JsonNumber(figures, field), 0) << operation << "." << field << " in " << figures;
    }
    // ZeroMQ's I/O threads are some of the echo peers' threads: they spend part of their CPU.
    EXPECT_LE(JsonNumber(figures, "raw_io_cpu_seconds_per_million_keys"),
              JsonNumber(figures, "raw_server_cpu_seconds_per_million_keys"))
        << figures;
    EXPECT_EQ(JsonNumber(figures, "keys"), 20 * 1024) << figures;
    EXPECT_LE(JsonNumber(figures, "p50"), JsonNumber(figures, "p99"));
    EXPECT_LE(JsonNumber(figures, "p99"), JsonNumber(figures, "p999"));
    // One ratio per round, each from that round's ember and raw halves; the figure is their median.
    const std::vector<double> ratios = JsonNumbers(figures, "ratio_rounds");
    ASSERT_EQ(ratios.size(), 3u) << figures;
    for (double ratio : ratios) EXPECT_GT(ratio, 0) << figures;
    EXPECT_NEAR(JsonNumber(figures, "ratio_to_raw"), Median(ratios),
                1e-6 * JsonNumber(figures, "ratio_to_raw"));
  }
  const std::string memory = JsonObject(json, "memory");
  for (const char* field : {"rows", "bytes_per_row", "raw_bytes_per_row", "rss_bytes_per_row"}) {
    EXPECT_GT(JsonNumber(memory, field), 0) << field << " in " << memory;
  }
  EXPECT_EQ(JsonNumber(memory, "raw_bytes_per_row"), 64 * 4 * 2);  // row and Adagrad state
  // The whole 100000-key vocabulary was created before timing, and no request goes beyond it.
  EXPECT_EQ(JsonNumber(memory, "rows"), 100000);
  const std::string populate = JsonObject(json, "populate");
  EXPECT_EQ(JsonNumber(populate, "rows"), 100000) << populate;
  EXPECT_GT(JsonNumber(populate, "rows_per_second"), 0) << populate;
  // The memory limit: a gather from as many rows as were created, as far apart as stored rows.
  const std::string gather = JsonObject(json, "gather");
  EXPECT_EQ(JsonNumber(gather, "rows"), 100000) << gather;
  EXPECT_EQ(JsonNumber(gather, "row_bytes"), 64 * 4 * 2) << gather;
  EXPECT_EQ(JsonNumber(gather, "copy_bytes"), 64 * 4) << gather;
  EXPECT_GT(JsonNumber(gather, "ns_per_row"), 0) << gather;
  EXPECT_GT(JsonNumber(gather, "ns_per_row_plain"), 0) << gather;
  // The floor: the table's own rows, every created row and none else (the requests stay within
  // them), copied and updated, found beforehand and found through the index.
  const std::string table_rows = JsonObject(json, "table_rows");
  EXPECT_EQ(JsonNumber(table_rows, "rows"), 100000) << table_rows;
  for (const char* field :
       {"ns_per_copy", "ns_per_update", "ns_per_indexed_copy", "ns_per_indexed_update"}) {
    EXPECT_GT(JsonNumber(table_rows, field), 0) << field << " in " << table_rows;
  }
  EXPECT_GT(JsonNumber(json, "cores"), 0) << json;

  const std::string printed = testing::ReadFile(log);
  EXPECT_NE(printed.find("of raw ZeroMQ (median of 3 interleaved rounds, range "),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("bytes/row"), std::string::npos) << printed;
  EXPECT_NE(printed.find("memory limit  a random gather of 256 B from 100000 rows 512 B apart"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("floor         pull: server "), std::string::npos) << printed;
}

// --curve: the in-process cluster and the echo peers authenticate and encrypt, and every request
// still gets through.
TEST(BenchTest, CurveRunEncryptsEmberAndTheEchoTrafficAlike) {
  testing::TempDir dir;
  const std::string json_path = dir.path() + "/bench.json";
  const std::string log = dir.path() + "/bench.log";
  ChildProcess bench({EMBER_BINARY, "bench", "--curve", "--keys-per-request", "1024",
                      "--vocabulary", "100000", "--requests", "10", "--rounds", "2", "--json",
                      json_path},
                     log);
  ASSERT_EQ(bench.WaitExit(seconds(120)), 0) << testing::ReadFile(log);
  const std::string json = testing::ReadFile(json_path);
  EXPECT_NE(JsonObject(json, "config").find("\"curve\": true"), std::string::npos) << json;
  for (const char* operation : {"pull", "push"}) {
    const std::string figures = JsonObject(json, operation);
    EXPECT_EQ(JsonNumber(figures, "keys"), 10 * 1024) << figures;
    EXPECT_GT(JsonNumber(figures, "raw_keys_per_second"), 0) << figures;
  }
  EXPECT_NE(testing::ReadFile(log).find("both over CurveZMQ"), std::string::npos);
}

TEST(BenchTest, BadFlagsAreUsageErrors) {
  testing::TempDir dir;
  const std::string log = dir.path() + "/bench.log";
  ChildProcess help({EMBER_BINARY, "bench", "--help"}, log);
  EXPECT_EQ(help.WaitExit(seconds(20)), 0);
  EXPECT_NE(testing::ReadFile(log).find("usage: ember bench"), std::string::npos);
  ChildProcess bad_optimizer({EMBER_BINARY, "bench", "--optimizer", "lbfgs"}, log);
  EXPECT_EQ(bad_optimizer.WaitExit(seconds(20)), 2);
  ChildProcess small_vocabulary(
      {EMBER_BINARY, "bench", "--keys-per-request", "1000", "--vocabulary", "1000"}, log);
  EXPECT_EQ(small_vocabulary.WaitExit(seconds(20)), 2);
  EXPECT_NE(testing::ReadFile(log).find("--vocabulary"), std::string::npos);
  ChildProcess no_rounds({EMBER_BINARY, "bench", "--rounds", "0"}, log);
  EXPECT_EQ(no_rounds.WaitExit(seconds(20)), 2);
  EXPECT_NE(testing::ReadFile(log).find("--rounds must be at least 1"), std::string::npos)
      << testing::ReadFile(log);
  ChildProcess more_rounds_than_requests(
      {EMBER_BINARY, "bench", "--requests", "2", "--rounds", "3"}, log);
  EXPECT_EQ(more_rounds_than_requests.WaitExit(seconds(20)), 2);
  EXPECT_NE(testing::ReadFile(log).find("--rounds must be at most --requests"), std::string::npos)
      << testing::ReadFile(log);
}

// Every figure of the printed table is also in the JSON, with the same value.
TEST(BenchReportTest, TableFiguresAreInTheJson) {
  bench::BenchReport report;
  report.pull = {.requests = 10, .keys = 1000, .seconds = 0.5, .keys_per_second = 2000,
                 .gb_per_second = 0.25, .latency_p50_ms = 1.5, .latency_p99_ms = 2.5,
                 .latency_p999_ms = 3.5, .server_cpu_seconds_per_million_keys = 0.75,
                 .client_cpu_seconds_per_million_keys = 0.125,
                 .server_worker_cpu_seconds_per_million_keys = 0.5,
                 .raw_server_cpu_seconds_per_million_keys = 0.0625,
                 .raw_io_cpu_seconds_per_million_keys = 0.05,
                 .raw_client_cpu_seconds_per_million_keys = 0.1,
                 .raw_keys_per_second = 4000, .raw_gb_per_second = 0.5,
                 .ratio_rounds = {0.6, 0.5, 0.4}, .ratio_to_raw = 0.5,
                 .lookup_keys_per_second = 9000};
  report.config.rounds = 3;
  report.push = report.pull;
  report.push.server_cpu_seconds_per_million_keys.reset();
  report.memory = {.rows = 42, .bytes_per_row = 300.5, .raw_bytes_per_row = 256,
                   .rss_bytes_per_row = 512.25};
  report.gather = bench::GatherFigures{.rows = 77, .row_bytes = 512, .copy_bytes = 256,
                                       .ns_per_row = 50, .ns_per_row_plain = 125.5};
  report.table_rows = bench::TableRowsFigures{.rows = 77,
                                              .ns_per_copy = 50,
                                              .ns_per_update = 150,
                                              .ns_per_indexed_copy = 80,
                                              .ns_per_indexed_update = 200};
  report.cores = 2;
  const std::string table = bench::FormatBenchTable(report);
  const std::string json = bench::BenchReportJson(report);
  for (const char* printed :
       {"2000", "0.250", "1.50", "2.50", "3.50", "0.750", "4000", "0.500", "0.50x", "9000",
        "42 rows", "300.5", "512.2", "n/a", "in 3 rounds",
        "median of 3 interleaved rounds, range 0.40-0.60x", "256 B from 77 rows 512 B apart",
        "50.0 ns/row with prefetch", "125.5 without",
        "pull: server 750 ns (15.00x), workers 500 ns + transport 250 ns "
        "(a raw ZeroMQ peer: 62 ns); client 125 ns (2.50x); the table "
        "alone 111111 ns (2222.22x)",
        "push: server n/a (n/a), workers 500 ns + transport n/a ns",
        "a pull's copy 50.0 ns/row, an update by the optimizer 150.0 ns/row",
        // The floors: the table's rows copied (or updated) and ZeroMQ's I/O
        // thread; two cores over that and the raw client's 100 ns.
        "pull: server 100 ns (2.00x) = the table's rows 50 + ZeroMQ's I/O "
        "thread 50; with a raw client's 100 ns, 2 cores move at most "
        "10.00M keys/s",
        "push: server 200 ns (4.00x) = the table's rows 150 + ZeroMQ's I/O "
        "thread 50; with a raw client's 100 ns, 2 cores move at most "
        "6.67M keys/s",
        // With each row found through the index: 80 and 200 ns.
        "each found through the table's index (no lock): 80.0 and 200.0 "
        "ns/row",
        "with the index: server 130 ns (2.60x) = 80 + 50; at most 8.70M "
        "keys/s",
        "with the index: server 250 ns (5.00x) = 200 + 50; at most 5.71M "
        "keys/s"}) {
    EXPECT_NE(table.find(printed), std::string::npos) << printed << " in\n" << table;
  }
  const std::string pull = JsonObject(json, "pull");
  EXPECT_EQ(JsonNumber(pull, "keys_per_second"), 2000);
  EXPECT_EQ(JsonNumber(pull, "gb_per_second"), 0.25);
  EXPECT_EQ(JsonNumber(pull, "p50"), 1.5);
  EXPECT_EQ(JsonNumber(pull, "p99"), 2.5);
  EXPECT_EQ(JsonNumber(pull, "p999"), 3.5);
  EXPECT_EQ(JsonNumber(pull, "server_cpu_seconds_per_million_keys"), 0.75);
  EXPECT_EQ(JsonNumber(pull, "raw_keys_per_second"), 4000);
  EXPECT_EQ(JsonNumber(pull, "raw_gb_per_second"), 0.5);
  EXPECT_EQ(JsonNumber(pull, "ratio_to_raw"), 0.5);
  EXPECT_EQ(JsonNumbers(pull, "ratio_rounds"), (std::vector<double>{0.6, 0.5, 0.4}));
  EXPECT_EQ(JsonNumber(JsonObject(json, "config"), "rounds"), 3);
  EXPECT_EQ(JsonNumber(pull, "lookup_keys_per_second"), 9000);
  EXPECT_EQ(JsonNumber(pull, "server_cpu_to_gather"), 15);
  EXPECT_EQ(JsonNumber(pull, "client_cpu_seconds_per_million_keys"), 0.125);
  EXPECT_EQ(JsonNumber(pull, "client_cpu_to_gather"), 2.5);
  EXPECT_EQ(JsonNumber(pull, "server_worker_cpu_seconds_per_million_keys"), 0.5);
  EXPECT_EQ(JsonNumber(pull, "raw_server_cpu_seconds_per_million_keys"), 0.0625);
  EXPECT_EQ(JsonNumber(pull, "raw_io_cpu_seconds_per_million_keys"), 0.05);
  EXPECT_EQ(JsonNumber(pull, "raw_client_cpu_seconds_per_million_keys"), 0.1);
  EXPECT_DOUBLE_EQ(JsonNumber(pull, "server_floor_ns"), 100);
  EXPECT_DOUBLE_EQ(JsonNumber(pull, "server_floor_to_gather"), 2);
  EXPECT_DOUBLE_EQ(JsonNumber(pull, "keys_per_second_bound"), 1e7);
  EXPECT_DOUBLE_EQ(JsonNumber(JsonObject(json, "push"), "server_floor_ns"), 200);
  EXPECT_DOUBLE_EQ(JsonNumber(pull, "server_floor_indexed_ns"), 130);
  EXPECT_DOUBLE_EQ(JsonNumber(pull, "server_floor_indexed_to_gather"), 2.6);
  EXPECT_DOUBLE_EQ(JsonNumber(pull, "keys_per_second_bound_indexed"), 2e9 / 230);
  EXPECT_EQ(JsonNumber(json, "cores"), 2);
  const std::string gather = JsonObject(json, "gather");
  EXPECT_EQ(JsonNumber(gather, "rows"), 77);
  EXPECT_EQ(JsonNumber(gather, "ns_per_row"), 50);
  EXPECT_EQ(JsonNumber(gather, "ns_per_row_plain"), 125.5);
  const std::string table_rows = JsonObject(json, "table_rows");
  EXPECT_EQ(JsonNumber(table_rows, "rows"), 77);
  EXPECT_EQ(JsonNumber(table_rows, "ns_per_copy"), 50);
  EXPECT_EQ(JsonNumber(table_rows, "ns_per_update"), 150);
  EXPECT_EQ(JsonNumber(table_rows, "ns_per_indexed_copy"), 80);
  EXPECT_EQ(JsonNumber(table_rows, "ns_per_indexed_update"), 200);
  // A figure the table shows as n/a is null in the JSON.
  EXPECT_NE(JsonObject(json, "push").find("\"server_cpu_seconds_per_million_keys\": null"),
            std::string::npos)
      << json;
  const std::string memory = JsonObject(json, "memory");
  EXPECT_EQ(JsonNumber(memory, "rows"), 42);
  EXPECT_EQ(JsonNumber(memory, "bytes_per_row"), 300.5);
  EXPECT_EQ(JsonNumber(memory, "raw_bytes_per_row"), 256);
  EXPECT_EQ(JsonNumber(memory, "rss_bytes_per_row"), 512.25);
}

TEST(BenchTest, TierBenchPrintsEveryFigure) {
  testing::TempDir dir;
  const std::string log = dir.path() + "/out.log";
  ChildProcess bench({EMBER_BINARY, "bench-tier", "--data-dir", dir.path() + "/tier", "--rows",
                      "20000", "--keys-per-request", "256", "--seconds", "1"},
                     log);
  ASSERT_EQ(bench.WaitExit(seconds(120)), 0) << testing::ReadFile(log);
  const std::string out = testing::ReadFile(log);
  for (const char* figure :
       {"pull, in memory", "push, in memory", "pull+push, in memory", "pull, tiered",
        "push, tiered, ack", "pull+push, tiered, ack", "tiered/in memory: pull", "hit rate",
        "bytes per row", "the cold path alone", "of them in RocksDB) cost at least",
        "kept changed in the cold row file",
        "a plain file of the rows in the page cache: a row read with pread",
        "over a plain file at least", "of them from the cold row file", "recovery after SIGKILL",
        "logged writes replayed", "the cold row file alone: a row found in",
        "bytes logged per key: at most"}) {
    EXPECT_NE(out.find(figure), std::string::npos) << figure << "\n" << out;
  }
  ChildProcess again({EMBER_BINARY, "bench-tier", "--data-dir", dir.path() + "/tier"}, log);
  EXPECT_EQ(again.WaitExit(seconds(20)), 2);
  EXPECT_NE(testing::ReadFile(log).find("is not empty"), std::string::npos);
}

}  // namespace
}  // namespace ember
