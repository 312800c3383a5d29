// ServerMetrics: ShardService's counters as Prometheus metric families.
#include "ps/server/server_metrics.h"

#include <limits>
#include <string>

#include "common/metric_families.h"

namespace ember::ps {
namespace {

using metrics::AddSample;
using metrics::CounterFamily;
using metrics::GaugeFamily;
using metrics::Single;

// The latency histogram of each request kind.
prometheus::MetricFamily LatencyHistograms(const std::vector<RequestMetrics::KindFigures>& kinds) {
  auto family =
      metrics::Family("ember_server_request_duration_seconds",
                      "Time a server took to decode, handle and encode a request, by request kind.",
                      prometheus::MetricType::Histogram);
  for (const RequestMetrics::KindFigures& kind : kinds) {
    prometheus::ClientMetric metric;
    metric.label = {{"kind", std::string(kind.kind)}};
    uint64_t cumulative = 0;
    for (size_t b = 0; b < kind.buckets.size(); ++b) {
      cumulative += kind.buckets[b];
      const double bound = b < RequestMetrics::kBucketSeconds.size()
                               ? RequestMetrics::kBucketSeconds[b]
                               : std::numeric_limits<double>::infinity();
      metric.histogram.bucket.push_back({cumulative, bound});
    }
    metric.histogram.sample_count = cumulative;
    metric.histogram.sample_sum = kind.seconds;
    family.metric.push_back(std::move(metric));
  }
  return family;
}

}  // namespace

// Per table, every figure of common/table_stats.h: one family each, one sample per table.
std::vector<prometheus::MetricFamily> TableFamilies(const ServerStats& stats) {
  std::vector<prometheus::MetricFamily> families;
  const auto add_family = [&](prometheus::MetricFamily family, uint64_t TableStats::*field) {
    for (const TableStats& table : stats.tables) {
      AddSample(family, static_cast<double>(table.*field), {{"table", table.name}});
    }
    families.push_back(std::move(family));
  };
#define EMBER_TABLE_STAT_FAMILY(field, Name, Type, metric, help, logged) \
  add_family(Type##Family(metric, help), &TableStats::field);
  EMBER_TABLE_STATS(EMBER_TABLE_STAT_FAMILY)
#undef EMBER_TABLE_STAT_FAMILY
  return families;
}

std::vector<prometheus::MetricFamily> ServerMetrics::Collect() const {
  const ServerStats stats = service_.Stats();
  const std::vector<RequestMetrics::KindFigures> kinds = service_.counters().requests().Snapshot();
  std::vector<prometheus::MetricFamily> families;

  families.push_back(Single(
      CounterFamily("ember_server_keys_pulled_total", "Keys whose rows this server returned."),
      static_cast<double>(stats.keys_pulled)));
  families.push_back(Single(
      CounterFamily("ember_server_keys_pushed_total", "Keys whose gradients this server applied."),
      static_cast<double>(stats.keys_pushed)));
  auto requests = CounterFamily("ember_server_requests_total", "Requests handled, by kind.");
  auto errors = CounterFamily("ember_server_request_errors_total",
                              "Requests answered with an error, by kind.");
  for (const RequestMetrics::KindFigures& kind : kinds) {
    AddSample(requests, static_cast<double>(kind.requests), {{"kind", std::string(kind.kind)}});
    AddSample(errors, static_cast<double>(kind.errors), {{"kind", std::string(kind.kind)}});
  }
  families.push_back(std::move(requests));
  families.push_back(std::move(errors));
  families.push_back(LatencyHistograms(kinds));

  for (prometheus::MetricFamily& family : TableFamilies(stats)) {
    families.push_back(std::move(family));
  }

  auto refusals = CounterFamily("ember_server_limit_refusals_total",
                                "Requests or messages refused for passing a limit (limits:).");
  for (const LimitHit& hit : stats.limits_hit) {
    AddSample(refusals, static_cast<double>(hit.count), {{"limit", hit.limit}});
  }
  families.push_back(std::move(refusals));
  families.push_back(
      Single(CounterFamily("ember_server_duplicate_pushes_total",
                           "Resent pushes answered without being applied again."),
             static_cast<double>(service_.counters().Get(ShardCount::kDuplicatePushes))));
  families.push_back(Single(
      CounterFamily("ember_server_moves_in_total", "Partition moves into this server completed."),
      static_cast<double>(service_.counters().Get(ShardCount::kMovesIn))));
  families.push_back(Single(CounterFamily("ember_server_moves_out_total",
                                          "Partition moves out of this server completed."),
                            static_cast<double>(service_.counters().Get(ShardCount::kMovesOut))));
  families.push_back(
      Single(GaugeFamily("ember_server_partitions_owned", "Partitions this server serves."),
             stats.partitions_owned));
  families.push_back(
      Single(GaugeFamily("ember_server_routing_epoch", "The routing epoch this server serves at."),
             static_cast<double>(service_.epoch())));
  families.push_back(
      Single(GaugeFamily("ember_server_id", "This server's id in the cluster."), stats.server_id));
  return families;
}

}  // namespace ember::ps
