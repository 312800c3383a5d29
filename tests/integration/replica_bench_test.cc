// `ember bench-replica` in a short run: both sides of every round are measured, every probe's
// row shows on the replica (the lag samples are real and bounded), and the stream's bytes per row
// are a row's payload (its key and dim floats).
#include <gtest/gtest.h>

#include "bench/replica_bench.h"

namespace ember {
namespace {

TEST(ReplicaBenchTest, AShortRunMeasuresBothSidesAndTheLag) {
  bench::ReplicaBenchOptions options;
  options.vocabulary = 20'000;
  options.keys_per_request = 1024;
  options.dim = 8;
  options.partitions = 16;
  options.seconds = 0.5;
  options.rounds = 2;
  options.poll_ms = 10;
  options.probe_ms = 10;
  auto report = bench::RunReplicaBench(options, [](const std::string&) {});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->with.size(), 2u);
  ASSERT_EQ(report->without.size(), 2u);
  for (const auto& side : report->with) {
    EXPECT_GT(side.pull_keys_per_second, 0);
    EXPECT_GT(side.push_keys_per_second, 0);
  }
  EXPECT_GT(report->pull_ratio, 0);
  EXPECT_GT(report->push_ratio, 0);
  EXPECT_FALSE(report->lag_ms.empty());
  EXPECT_EQ(report->probes_lost, 0u);
  EXPECT_LE(report->lag_p50_ms, report->lag_p99_ms);
  EXPECT_GT(report->lag_p50_ms, 0);
  EXPECT_DOUBLE_EQ(report->stream_bytes_per_row, 8 + 8 * 4);
  EXPECT_GT(report->copy_seconds, 0);
  EXPECT_NE(bench::ReplicaBenchJson(options, *report).find("\"lag_ms\""), std::string::npos);
  EXPECT_EQ(bench::CheckReplicaBenchOptions({.rounds = 0}).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ember
