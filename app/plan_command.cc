// `ember plan`: servers, memory, disk and network for a table of a given size and traffic, from
// local/cluster_plan.h, as a table with its arithmetic or (--json) as JSON.
#include <cstdio>

#include "app/commands.h"
#include "embedding/table_config.h"
#include "local/cluster_plan.h"

namespace ember::app {
namespace {

constexpr CommandText kPlanCommand = {
    .name = "plan",
    .summary = "servers, memory, disk and network for a table of N rows at K keys/s",
    .usage = "ember plan --rows N --dim D [--optimizer O] [--keys-per-second K] [options]",
    .description =
        "Prints the bytes a row takes in memory, on disk, in a checkpoint and on the wire, the "
        "servers needed for the memory and for the keys/s, each server's share, and how long "
        "moving or reopening that share takes, each figure with its arithmetic. The per-row "
        "layout comes from the code; CPU per key, memory overhead, move and reopen rates were "
        "measured on ember (docs/sizing.md).",
};

void AddPlanFlags(CLI::App* command, PlanFlags* flags) {
  const std::string table = "table", load = "traffic", servers = "servers";
  AddCount(command, "--rows", &flags->rows, "N", "rows of the table")->required()->group(table);
  AddCount(command, "--dim", &flags->dim, "D", "values per row")->required()->group(table);
  AddValue(command, "--optimizer", &flags->optimizer, "KIND",
           "sgd, adagrad (default), adam or ftrl: its state is stored with each row")
      ->group(table);
  AddValue(command, "--partitions", &flags->partitions, "P",
           "cluster.partitions (default 1024): rows per partition size the hash index")
      ->check(Digits())
      ->group(table);
  AddValue(command, "--keys-per-second", &flags->keys_per_second, "K",
           "keys pulled per second over the cluster, each also pushed (default 0: none)")
      ->group(load);
  AddValue(command, "--wire", &flags->wire, "FORMAT",
           "f32 (default) or f16: how rows and gradients travel (train.wire_fp16)")
      ->check(CLI::IsMember({"f32", "f16"}))
      ->group(load);
  AddValue(command, "--server-memory-gib", &flags->server_memory_gib, "GIB",
           "memory of one server (default 256)")
      ->group(servers);
  AddCount(command, "--server-cores", &flags->server_cores, "N",
           "cores of one server (default 16)")
      ->group(servers);
  AddValue(command, "--server-network-gbits", &flags->server_network_gbits, "GBITS",
           "network of one server, Gbit/s (default 25)")
      ->group(servers);
  AddValue(command, "--hot-fraction", &flags->hot_fraction, "F",
           "share of rows kept in memory (default 1); below 1 the rest go to each server's "
           "RocksDB tier (--memory-budget)")
      ->group(servers);
  command->add_flag("--json", flags->json, "print the plan as JSON instead of a table")
      ->group("output");
}

}  // namespace

Command MakePlanCommand(CLI::App& ember) {
  return MakeCommand(ember, kPlanCommand, AddPlanFlags, RunPlan);
}

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
