// Helpers that build Prometheus metric families from a snapshot, for the roles' collectors
// (prometheus::Collectable implementations that read counters the code already keeps, at scrape
// time). Names follow Prometheus conventions: an `ember_` prefix, `_total` for counters,
// `_seconds` and `_bytes` for units; every family carries HELP text.
#pragma once

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

#include <string>
#include <utility>
#include <vector>

namespace ember::metrics {

using Labels = std::vector<prometheus::ClientMetric::Label>;

inline prometheus::MetricFamily Family(std::string name, std::string help,
                                       prometheus::MetricType type) {
  return prometheus::MetricFamily{std::move(name), std::move(help), type, {}};
}
inline prometheus::MetricFamily CounterFamily(std::string name, std::string help) {
  return Family(std::move(name), std::move(help), prometheus::MetricType::Counter);
}
inline prometheus::MetricFamily GaugeFamily(std::string name, std::string help) {
  return Family(std::move(name), std::move(help), prometheus::MetricType::Gauge);
}

// Adds one sample with `labels` to a counter or gauge family.
inline void AddSample(prometheus::MetricFamily& family, double value, Labels labels = {}) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  if (family.type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
}

// A family of one unlabelled sample.
inline prometheus::MetricFamily Single(prometheus::MetricFamily family, double value) {
  AddSample(family, value);
  return family;
}

}  // namespace ember::metrics
