// --metrics-bind HOST:PORT, which `ember scheduler`, `ember server` and `ember train` take, and how
// it combines with the config's `metrics:` section (local/metrics_config.h) into the endpoint a
// process serves Prometheus metrics on (common/metrics_endpoint.h). Off unless one of them asks.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "app/command_line.h"
#include "common/metrics_address.h"
#include "common/metrics_endpoint.h"

namespace ember::app {

// --metrics-bind; `config_key` names the config entry it overrides (e.g. metrics.servers).
void AddMetricsBindFlag(CLI::App* command, std::optional<std::string>* bind,
                        const std::string& config_key);

// Starts the endpoint of `role` at the flag's address, else at `configured` moved on by `offset`
// ports (a trainer's rank), else none (null). InvalidArgument naming --metrics-bind for a
// malformed flag; Unavailable naming the address when it cannot be bound. Logs the URL served.
Result<std::unique_ptr<MetricsEndpoint>> StartMetrics(
    std::string_view role, const std::optional<std::string>& flag,
    const std::optional<MetricsAddress>& configured, uint32_t offset = 0);

}  // namespace ember::app
