// The per-table figures declared in common/table_stats.h: each one, with a value of its own,
// reaches the counters' report, the wire (both ways), its Prometheus family and the run log's sums,
// so no figure is left out or mixed up with another anywhere.
#include "common/table_stats.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/wire.h"
#include "local/train_summary.h"
#include "ps/server/server_metrics.h"
#include "tests/metric_samples.h"

namespace ember {
namespace {

struct Declared {
  TableStat stat;
  std::string field;
  std::string metric;
  bool counter;
  bool logged;
};

std::vector<Declared> DeclaredFigures() {
  return {
#define EMBER_DECLARED_FIGURE(field, Name, Type, metric, help, logged) \
  {TableStat::k##Name, #field, metric, std::string(#Type) == "Counter", logged},
      EMBER_TABLE_STATS(EMBER_DECLARED_FIGURE)
#undef EMBER_DECLARED_FIGURE
  };
}

// Figure i of the declaration gets 1000 + i, so two figures never share a value.
uint64_t ValueOf(size_t i) { return 1000 + i; }

TEST(TableStatsTest, EveryFigureHasItsOwnNameAndMetric) {
  const std::vector<Declared> figures = DeclaredFigures();
  ASSERT_EQ(figures.size(), kTableStatCount);
  std::set<std::string> fields;
  std::set<std::string> metrics;
  for (size_t i = 0; i < figures.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(figures[i].stat), i);
    EXPECT_TRUE(fields.insert(figures[i].field).second) << figures[i].field;
    EXPECT_TRUE(metrics.insert(figures[i].metric).second) << figures[i].metric;
    const bool total = figures[i].metric.ends_with("_total");
    EXPECT_EQ(total, figures[i].counter)
        << figures[i].metric << ": counters, and only they, end in _total";
  }
}

TEST(TableStatsTest, EveryFigureReachesTheReportTheWireMetricsAndTheRunLog) {
  const std::vector<Declared> figures = DeclaredFigures();
  TableStatCounters counters;
  for (size_t i = 0; i < figures.size(); ++i) counters.Add(figures[i].stat, ValueOf(i));
  ServerStats stats;
  stats.tables.push_back(TableStats{"item"});
  counters.AddTo(stats.tables[0]);
  stats.tables.push_back(TableStats{"user"});
  counters.AddTo(stats.tables[1]);

  auto decoded = wire::DecodeResponse(wire::EncodeStatsResponse(1, 2, stats));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_TRUE(std::holds_alternative<ServerStats>(decoded->body));
  ServerStats got = std::get<ServerStats>(decoded->body);
  ASSERT_EQ(got.tables.size(), 2u);
  const auto families = ps::TableFamilies(got);
  TableStats sum = local::SumTableStats(got);
  const nlohmann::json log =
      nlohmann::json::parse(local::TrainSummaryJson(trainer::TrainSummary{}, {got}, std::nullopt));
  const nlohmann::json& logged = log.at("servers").at(0);

  for (size_t i = 0; i < figures.size(); ++i) {
    SCOPED_TRACE(figures[i].field);
    EXPECT_EQ(StatField(stats.tables[0], figures[i].stat), ValueOf(i)) << "report";
    EXPECT_EQ(StatField(got.tables[1], figures[i].stat), ValueOf(i)) << "wire";
    EXPECT_EQ(testing::SampleOf(families, figures[i].metric, {{"table", "user"}}),
              static_cast<double>(ValueOf(i)))
        << "metrics";
    EXPECT_EQ(StatField(sum, figures[i].stat), 2 * ValueOf(i)) << "sums";
    if (figures[i].logged) {
      EXPECT_EQ(logged.value(figures[i].field, uint64_t{0}), 2 * ValueOf(i)) << "run log";
    } else {
      EXPECT_FALSE(logged.contains(figures[i].field)) << "run log";
    }
  }
}

TEST(TableStatsTest, CountersAddSubtractAndAddToAReport) {
  TableStatCounters counters;
  counters.Add(TableStat::kPinnedRows, 5);
  counters.Subtract(TableStat::kPinnedRows, 2);
  counters.Add(TableStat::kHits);
  EXPECT_EQ(counters.Get(TableStat::kPinnedRows), 3u);
  EXPECT_EQ(counters.Get(TableStat::kHits), 1u);
  EXPECT_EQ(counters.Get(TableStat::kMisses), 0u);
  TableStats report;
  report.hits = 10;  // AddTo adds to what a report holds
  counters.AddTo(report);
  EXPECT_EQ(report.hits, 11u);
  EXPECT_EQ(report.pinned_rows, 3u);
}

}  // namespace
}  // namespace ember
