// --metrics-bind and starting the metrics endpoint.
#include "app/metrics_flags.h"

#include <spdlog/spdlog.h>

namespace ember::app {

void AddMetricsBindFlag(CLI::App* command, std::optional<std::string>* bind,
                        const std::string& config_key) {
  AddValue(command, "--metrics-bind", bind, "HOST:PORT",
           "serve Prometheus metrics at http://HOST:PORT/metrics (port 0: a free one, logged; "
           "default: " +
               config_key + " from the config, else none)")
      ->group("metrics");
}

Result<std::unique_ptr<MetricsEndpoint>> StartMetrics(
    std::string_view role, const std::optional<std::string>& flag,
    const std::optional<MetricsAddress>& configured, uint32_t offset) {
  std::optional<MetricsAddress> address;
  if (flag) {
    ASSIGN_OR_RETURN(address, ParseMetricsAddress(*flag, "--metrics-bind"));
  } else if (configured) {
    ASSIGN_OR_RETURN(address, configured->Offset(offset));
  }
  if (!address) return std::unique_ptr<MetricsEndpoint>();
  ASSIGN_OR_RETURN(std::unique_ptr<MetricsEndpoint> endpoint,
                   MetricsEndpoint::Start(*address, role));
  spdlog::info("{}: serving Prometheus metrics at {}", role, endpoint->url());
  return endpoint;
}

}  // namespace ember::app
