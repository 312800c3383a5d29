// `ember plan`: servers, memory, disk and network for a table of a given size and traffic, from
// local/cluster_plan.h, as a table with its arithmetic or (--json) as JSON.
#include <cstdio>

#include "app/commands.h"
#include "embedding/table_config.h"
#include "local/cluster_plan.h"

namespace ember::app {

int RunPlan(const PlanFlags& flags) {
  auto optimizer = embedding::OptimizerKindFromName(flags.optimizer);
  if (!optimizer.ok()) return PrintError("plan", optimizer.status().WithContext("--optimizer"), 2);
  // Up to 2^24 GiB (16 PiB), so that the bytes fit a uint64.
  if (!(flags.server_memory_gib > 0 && flags.server_memory_gib <= (1 << 24))) {
    return PrintError("plan", InvalidArgument("--server-memory-gib must be in (0, 16777216]"), 2);
  }
  local::PlanInputs inputs;
  inputs.rows = flags.rows;
  inputs.dim = flags.dim;
  inputs.optimizer = *optimizer;
  inputs.wire_format = flags.wire == "f16" ? RowFormat::kF16 : RowFormat::kF32;
  inputs.keys_per_second = flags.keys_per_second;
  inputs.server_memory_bytes = static_cast<uint64_t>(flags.server_memory_gib * (1 << 30));
  inputs.server_cores = flags.server_cores;
  inputs.server_network_bytes_per_second = flags.server_network_gbits * 1e9 / 8;
  inputs.hot_fraction = flags.hot_fraction;
  inputs.partitions = flags.partitions;
  auto plan = local::PlanCluster(inputs);
  if (!plan.ok()) return PrintError("plan", plan.status(), 2);
  const std::string text = flags.json ? local::PlanJson(*plan) + "\n" : local::PlanText(*plan);
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace ember::app
