// The job config's `metrics:` section: where each role serves Prometheus metrics (`GET /metrics`,
// common/metrics_endpoint.h). Absent, or a role left out: that role serves none (the default).
// A role's `--metrics-bind HOST:PORT` flag overrides its entry.
//
//   metrics:
//     scheduler: 0.0.0.0:9400   # HOST:PORT (IPv4 or localhost; port 0 picks a free one)
//     servers: 0.0.0.0:9401     # `ember cluster` gives server i PORT+i
//     trainers: 0.0.0.0:9410    # the trainer of rank r serves on PORT+r
//
// Each process logs the URL it serves at.
#pragma once

#include <optional>
#include <string_view>

#include "common/metrics_address.h"
#include "common/status.h"

namespace YAML {
class Node;
}

namespace ember::local {

struct MetricsConfig {
  std::optional<MetricsAddress> scheduler, servers, trainers;
};

// Reads the section at `path` (absent or null: no metrics); InvalidArgument naming the key of an
// unknown entry or a malformed address.
Result<MetricsConfig> MetricsConfigFromYaml(const YAML::Node& node,
                                            std::string_view path = "metrics");

}  // namespace ember::local
