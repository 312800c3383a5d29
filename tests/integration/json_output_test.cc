// The JSON records ember writes parse as JSON whatever the figures hold: a loss that diverged to
// NaN or infinity is written as null.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "bench/bench_report.h"
#include "local/train_summary.h"

namespace ember {
namespace {

TEST(JsonOutputTest, ANanLossGivesParseableSummaryWithNull) {
  trainer::TrainSummary summary;
  summary.steps = 10;
  summary.backend = "cpu";
  summary.first_window.loss = 4.5;
  summary.last_window.loss = std::nan("");
  summary.samples_per_second = std::numeric_limits<double>::infinity();
  ServerStats server;
  server.server_id = 1;
  server.tables = {{.name = "a", .rows = 3, .bytes = 30}, {.name = "b", .rows = 4, .bytes = 40}};
  const std::string text = local::TrainSummaryJson(
      summary, {server}, local::EvalFigures{.model = {.hit_rate = 0.5, .cases = 7}});
  ASSERT_TRUE(nlohmann::json::accept(text)) << text;
  const nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_EQ(json["loss_start"], 4.5);
  EXPECT_TRUE(json["loss_end"].is_null()) << text;
  EXPECT_TRUE(json["samples_per_second"].is_null()) << text;
  EXPECT_EQ(json["steps"], 10);
  EXPECT_EQ(json["backend"], "cpu");
  ASSERT_EQ(json["servers"].size(), 1u);
  EXPECT_EQ(json["servers"][0]["id"], 1);
  EXPECT_EQ(json["servers"][0]["rows"], 7);  // summed over the server's tables
  EXPECT_EQ(json["eval"]["users"], 7);
  EXPECT_EQ(json["eval"]["hit_rate"], 0.5);
}

TEST(JsonOutputTest, ASummaryWithoutEvaluationHasNoEvalObject) {
  const nlohmann::json json = nlohmann::json::parse(local::TrainSummaryJson({}, {}, std::nullopt));
  EXPECT_FALSE(json.contains("eval"));
  EXPECT_TRUE(json["servers"].is_array());
}

TEST(JsonOutputTest, NonFiniteBenchFiguresAreNull) {
  bench::BenchReport report;
  report.config.scheduler = "tcp://host:7000 \"quoted\"\n";  // strings are escaped
  report.pull.keys_per_second = std::nan("");
  report.pull.ratio_rounds = {0.5, std::numeric_limits<double>::infinity()};
  report.memory.rss_bytes_per_row = -std::numeric_limits<double>::infinity();
  const std::string text = bench::BenchReportJson(report);
  ASSERT_TRUE(nlohmann::json::accept(text)) << text;
  const nlohmann::json json = nlohmann::json::parse(text);
  EXPECT_EQ(json["config"]["scheduler"], report.config.scheduler);
  EXPECT_TRUE(json["pull"]["keys_per_second"].is_null());
  EXPECT_EQ(json["pull"]["ratio_rounds"][0], 0.5);
  EXPECT_TRUE(json["pull"]["ratio_rounds"][1].is_null());
  EXPECT_TRUE(json["memory"]["rss_bytes_per_row"].is_null());
  EXPECT_TRUE(json["push"]["server_cpu_seconds_per_million_keys"].is_null());  // not known
}

TEST(JsonOutputTest, InvalidUtf8InAStringStillGivesParseableJson) {
  bench::BenchReport report;
  report.config.table = "rows\xff\xfe";
  EXPECT_TRUE(nlohmann::json::accept(bench::BenchReportJson(report)));
  trainer::TrainSummary summary;
  summary.backend = "cpu\xc3";
  EXPECT_TRUE(nlohmann::json::accept(local::TrainSummaryJson(summary, {}, std::nullopt)));
}

}  // namespace
}  // namespace ember
