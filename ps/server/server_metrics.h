// ServerMetrics: a parameter server's Prometheus collector (served by common/metrics_endpoint.h
// when the server runs with --metrics-bind). At each scrape it reads the counters the server
// already keeps: ShardService::Stats() (keys, rows, bytes and tier figures per table, limit
// refusals), the per-kind request counts and latency histograms of RequestMetrics, partition
// moves, and the routing epoch. Nothing is counted twice; a scrape costs one Stats() call.
//
// Thread-safety: Collect() runs on the endpoint's HTTP threads while the server serves.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <vector>

#include "ps/server/shard_service.h"

namespace ember::ps {

class ServerMetrics : public prometheus::Collectable {
 public:
  // `service` is borrowed and must outlive every scrape (stop the endpoint first).
  explicit ServerMetrics(const ShardService& service) : service_(service) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const ShardService& service_;
};

// The families of every per-table figure (common/table_stats.h) of `stats`, one sample per table.
std::vector<prometheus::MetricFamily> TableFamilies(const ServerStats& stats);

}  // namespace ember::ps
