// MetricsAddress: where a process serves its Prometheus metrics (`--metrics-bind HOST:PORT`, or
// the config's `metrics:` section), parsed and checked before anything binds, so that a bad value
// is named at once rather than when the HTTP server starts.
//
// HOST is an IPv4 address (0.0.0.0 for every interface) or `localhost`; PORT is 0..65535, where 0
// lets the operating system pick a free port (the process logs the one it got).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ember {

struct MetricsAddress {
  std::string host;   // an IPv4 address; `localhost` is kept as 127.0.0.1
  uint32_t port = 0;  // 0: any free port

  // HOST:PORT, as the HTTP server binds it.
  std::string ToString() const { return host + ":" + std::to_string(port); }
  // The same host, the port `offset` further on (port 0 stays 0: every process picks its own).
  // InvalidArgument when that passes 65535.
  Result<MetricsAddress> Offset(uint32_t offset) const;
};

// Parses HOST:PORT; InvalidArgument naming `what` (a flag or config key) and the value otherwise.
Result<MetricsAddress> ParseMetricsAddress(std::string_view text, std::string_view what);

}  // namespace ember
