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

// Per table: sizes (gauges) and the tier's, admission's and look-ahead's counts.
std::vector<prometheus::MetricFamily> TableFamilies(const ServerStats& stats) {
  struct TableFigure {
    prometheus::MetricFamily family;
    uint64_t TableStats::*field;
  };
  std::vector<TableFigure> per_table = {
      {GaugeFamily("ember_server_table_rows", "Rows of the table on this server."),
       &TableStats::rows},
      {GaugeFamily("ember_server_table_bytes",
                   "Bytes of the table's rows (with optimizer state) on this server."),
       &TableStats::bytes},
      {GaugeFamily("ember_server_table_resident_rows", "Rows of the table held in memory."),
       &TableStats::resident_rows},
      {GaugeFamily("ember_server_table_disk_bytes", "Bytes of the table's rows on disk (RocksDB)."),
       &TableStats::disk_bytes},
      {CounterFamily("ember_server_tier_hits_total", "Row lookups served from memory."),
       &TableStats::hits},
      {CounterFamily("ember_server_tier_misses_total", "Row lookups that went to disk."),
       &TableStats::misses},
      {CounterFamily("ember_server_tier_evictions_total",
                     "Rows evicted from memory to disk under the memory budget."),
       &TableStats::evictions},
      {CounterFamily("ember_server_admission_refusals_total",
                     "New keys the table's admission policy did not admit."),
       &TableStats::not_admitted},
      {CounterFamily("ember_server_updates_dropped_total",
                     "Pushed updates dropped for keys that were not admitted."),
       &TableStats::updates_dropped},
      {CounterFamily("ember_server_rows_expired_total",
                     "Rows deleted for passing the table's TTL."),
       &TableStats::expired},
      {CounterFamily("ember_server_non_finite_pushes_refused_total",
                     "Pushes refused for a NaN or infinite gradient."),
       &TableStats::non_finite_refused},
      {CounterFamily("ember_server_non_finite_rows_skipped_total",
                     "Rows left out of pushes for a NaN or infinite gradient."),
       &TableStats::non_finite_skipped},
      {CounterFamily("ember_server_hinted_keys_total", "Keys named by look-ahead hints."),
       &TableStats::hinted_keys},
      {CounterFamily("ember_server_prefetched_rows_total",
                     "Rows look-ahead hints read from disk ahead of their requests."),
       &TableStats::prefetched_rows},
      {CounterFamily("ember_server_rows_created_ahead_total",
                     "New rows look-ahead hints created ahead of their requests."),
       &TableStats::created_ahead},
      {GaugeFamily("ember_server_pinned_rows", "Rows pinned in memory by look-ahead hints."),
       &TableStats::pinned_rows},
      {GaugeFamily("ember_server_pinned_bytes",
                   "Bytes of the rows pinned by look-ahead hints (bounded by the pin budget)."),
       &TableStats::pinned_bytes},
      {CounterFamily("ember_server_pins_refused_total",
                     "Hinted rows left unpinned because the pin budget was full."),
       &TableStats::pins_refused},
      {GaugeFamily("ember_server_tracked_change_keys",
                   "Keys of changed rows held for the next incremental checkpoint cut."),
       &TableStats::tracked_change_keys},
  };
  std::vector<prometheus::MetricFamily> families;
  for (TableFigure& figure : per_table) {
    for (const TableStats& table : stats.tables) {
      AddSample(figure.family, static_cast<double>(table.*figure.field), {{"table", table.name}});
    }
    families.push_back(std::move(figure.family));
  }
  return families;

}

}  // namespace

std::vector<prometheus::MetricFamily> ServerMetrics::Collect() const {
  const ServerStats stats = service_.Stats();
  const std::vector<RequestMetrics::KindFigures> kinds = service_.request_metrics().Snapshot();
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
  families.push_back(Single(CounterFamily("ember_server_duplicate_pushes_total",
                                          "Resent pushes answered without being applied again."),
                            static_cast<double>(service_.duplicate_pushes())));
  families.push_back(Single(
      CounterFamily("ember_server_moves_in_total", "Partition moves into this server completed."),
      static_cast<double>(service_.moves_in())));
  families.push_back(Single(CounterFamily("ember_server_moves_out_total",
                                          "Partition moves out of this server completed."),
                            static_cast<double>(service_.moves_out())));
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
