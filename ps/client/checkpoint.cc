// Checkpoints of a cluster: the calls that make every server write, verify or load its share,
// and the request for a cut.
#include "ps/client/checkpoint.h"

#include <algorithm>

#include "common/file_io.h"

namespace ember::ps {

Result<Manifest> CheckpointServers(Client& client, const std::string& dir, uint64_t step,
                                   Millis timeout) {
  ASSIGN_OR_RETURN(const std::string absolute, CanonicalDirectory(dir, "checkpoint directory"));
  RETURN_IF_ERROR(MakeDirectories(absolute));
  RETURN_IF_ERROR(client.Checkpoint(absolute, CheckpointAction::kWrite, timeout));
  const RoutingTable routing = client.routing();
  Manifest manifest;
  manifest.step = step;
  manifest.servers = static_cast<uint32_t>(routing.servers.size());
  manifest.partitions = routing.num_partitions;
  for (const TableSpec& spec : client.tables()) manifest.tables.push_back({spec.name, spec.dim});
  return manifest;
}

Result<CutInfo> RequestCheckpoint(const std::string& scheduler_endpoint,
                                  const TransportSecurity& security, const std::string& dir,
                                  Millis timeout) {
  ASSIGN_OR_RETURN(const std::string absolute, CanonicalDirectory(dir, "checkpoint directory"));
  return SchedulerClient(scheduler_endpoint, security).CheckpointNow(absolute, timeout);
}

Result<Manifest> RestoreServers(Client& client, const std::string& dir, Millis timeout) {
  ASSIGN_OR_RETURN(const std::string absolute, CanonicalDirectory(dir, "checkpoint directory"));
  ASSIGN_OR_RETURN(Manifest manifest, ReadAndVerifyCheckpoint(absolute));
  const RoutingTable routing = client.routing();
  if (manifest.partitions != routing.num_partitions) {
    return FailedPrecondition("checkpoint '" + absolute + "' has " +
                              std::to_string(manifest.partitions) + " partitions, the cluster " +
                              std::to_string(routing.num_partitions));
  }
  for (const TableSpec& spec : client.tables()) {
    const bool present = std::any_of(
        manifest.tables.begin(), manifest.tables.end(),
        [&](const ManifestTable& t) { return t.name == spec.name && t.dim == spec.dim; });
    if (!present) {
      return FailedPrecondition("checkpoint '" + absolute + "' has no table '" + spec.name +
                                "' of dim " + std::to_string(spec.dim));
    }
  }
  // Every server checks its files before any loads, so no server changes a row unless all can.
  RETURN_IF_ERROR(client.Checkpoint(absolute, CheckpointAction::kVerify, timeout));
  RETURN_IF_ERROR(client.Checkpoint(absolute, CheckpointAction::kRestore, timeout));
  return manifest;
}

}  // namespace ember::ps
