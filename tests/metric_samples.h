// Reading collectors' output in tests: the value of one sample of the metric families a
// prometheus::Collectable gave.
#pragma once

#include <prometheus/metric_family.h>

#include <string>
#include <vector>

namespace ember::testing {

// The counter or gauge value of `name`'s sample whose labels include every (label, value) of
// `labels`; -1 when there is none.
inline double SampleOf(const std::vector<prometheus::MetricFamily>& families,
                       const std::string& name,
                       const std::vector<prometheus::ClientMetric::Label>& labels = {}) {
  for (const prometheus::MetricFamily& family : families) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      bool matches = true;
      for (const auto& wanted : labels) {
        bool found = false;
        for (const auto& label : metric.label) found = found || label == wanted;
        matches = matches && found;
      }
      if (!matches) continue;
      return family.type == prometheus::MetricType::Counter ? metric.counter.value
                                                            : metric.gauge.value;
    }
  }
  return -1;
}

// The histogram of `name` with label kind=`kind`, or null.
inline const prometheus::ClientMetric::Histogram* HistogramOf(
    const std::vector<prometheus::MetricFamily>& families, const std::string& name,
    const std::string& kind) {
  for (const prometheus::MetricFamily& family : families) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      for (const auto& label : metric.label) {
        if (label.name == "kind" && label.value == kind) return &metric.histogram;
      }
    }
  }
  return nullptr;
}

}  // namespace ember::testing
