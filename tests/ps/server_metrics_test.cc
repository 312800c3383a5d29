// ServerMetrics and RequestMetrics: a scrape shows what the service counted, requests and errors
// per kind, latency histograms whose buckets add up, and counts stay exact under concurrent
// recording.
#include "ps/server/server_metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "tests/metric_samples.h"

namespace ember::ps {
namespace {

using testing::HistogramOf;
using testing::SampleOf;

TEST(ServerMetricsTest, AScrapeShowsRequestsErrorsLatencyAndTableSizes) {
  TableSpec spec;
  spec.name = "item";
  spec.dim = 4;
  auto service =
      ShardService::Create(0, {spec}, MakeBalancedRouting(16, {{0, "tcp://127.0.0.1:1"}}, 1));
  ASSERT_TRUE(service.ok()) << service.status().ToString();
  const std::vector<uint64_t> keys = {1, 2, 3, 4, 5};
  (void)(*service)->Handle(wire::EncodePull({1, 1}, "item", keys), Peer{});
  (void)(*service)->Handle(wire::EncodePull({2, 1}, "item", keys), Peer{});
  (void)(*service)->Handle(wire::EncodePull({3, 1}, "no-such-table", keys), Peer{});
  (void)(*service)->Handle(Frame(std::string("not a request")), Peer{});

  const auto families = ServerMetrics(**service).Collect();
  EXPECT_EQ(SampleOf(families, "ember_server_keys_pulled_total"), 10);
  EXPECT_EQ(SampleOf(families, "ember_server_requests_total", {{"kind", "pull"}}), 3);
  EXPECT_EQ(SampleOf(families, "ember_server_request_errors_total", {{"kind", "pull"}}), 1);
  EXPECT_EQ(SampleOf(families, "ember_server_requests_total", {{"kind", "undecoded"}}), 1);
  EXPECT_EQ(SampleOf(families, "ember_server_request_errors_total", {{"kind", "undecoded"}}), 1);
  EXPECT_EQ(SampleOf(families, "ember_server_table_rows", {{"table", "item"}}), 5);
  EXPECT_EQ(SampleOf(families, "ember_server_routing_epoch"), 1);
  EXPECT_EQ(SampleOf(families, "ember_server_partitions_owned"), 16);
  const auto* pulls = HistogramOf(families, "ember_server_request_duration_seconds", "pull");
  ASSERT_NE(pulls, nullptr);
  EXPECT_EQ(pulls->sample_count, 3u);
  EXPECT_GT(pulls->sample_sum, 0);
  ASSERT_EQ(pulls->bucket.size(), RequestMetrics::kBucketSeconds.size() + 1);
  EXPECT_TRUE(std::isinf(pulls->bucket.back().upper_bound));
  EXPECT_EQ(pulls->bucket.back().cumulative_count, 3u);
  for (size_t b = 1; b < pulls->bucket.size(); ++b) {
    EXPECT_GE(pulls->bucket[b].cumulative_count, pulls->bucket[b - 1].cumulative_count);
  }
}

TEST(RequestMetricsTest, LatenciesLandInTheirBuckets) {
  RequestMetrics metrics;
  metrics.Record("pull", std::chrono::microseconds(10), false);  // <= 50 us
  metrics.Record("pull", std::chrono::milliseconds(3), true);    // <= 5 ms
  metrics.Record("push", std::chrono::seconds(10), false);       // +Inf
  const auto kinds = metrics.Snapshot();
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0].kind, "pull");
  EXPECT_EQ(kinds[0].requests, 2u);
  EXPECT_EQ(kinds[0].errors, 1u);
  EXPECT_EQ(kinds[0].buckets[0], 1u);
  EXPECT_EQ(kinds[0].buckets[6], 1u);  // 2.5 ms < 3 ms <= 5 ms
  EXPECT_NEAR(kinds[0].seconds, 0.00301, 1e-9);
  EXPECT_EQ(kinds[1].kind, "push");
  EXPECT_EQ(kinds[1].buckets.back(), 1u);
}

TEST(RequestMetricsTest, ConcurrentRecordingLosesNothing) {
  RequestMetrics metrics;
  constexpr int kThreads = 4, kEach = 20000;
  const char* kinds[] = {"pull", "push", "stats", "ping"};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        metrics.Record(kinds[(t + i) % 4], std::chrono::microseconds(i % 300), i % 7 == 0);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  uint64_t requests = 0, in_buckets = 0;
  const auto figures = metrics.Snapshot();
  EXPECT_EQ(figures.size(), 4u);  // each kind claimed one slot, whoever came first
  for (const auto& kind : figures) {
    requests += kind.requests;
    for (uint64_t count : kind.buckets) in_buckets += count;
  }
  EXPECT_EQ(requests, uint64_t{kThreads} * kEach);
  EXPECT_EQ(in_buckets, requests);
}

}  // namespace
}  // namespace ember::ps
