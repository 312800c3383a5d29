// Checkpoints of a cluster: the calls that make every server write, verify or load its share,
// and the request for a cut.
#include "ps/client/checkpoint.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>

#include "common/file_io.h"

namespace ember::ps {

namespace {

// A cut id no other cut has had: random, never 0.
uint64_t NewCutId() {
  static thread_local std::mt19937_64 generator(std::random_device{}() ^
                                                static_cast<uint64_t>(
                                                    std::chrono::steady_clock::now()
                                                        .time_since_epoch()
                                                        .count()));
  uint64_t id = 0;
  while (id == 0) id = generator();
  return id;
}

}  // namespace

Result<CheckpointChaining> ChainingOf(const CutInfo& cut, uint32_t partitions) {
  CheckpointChaining chaining;
  if (!cut.after.empty()) {
    chaining.chained = true;
    ASSIGN_OR_RETURN(Manifest after, ReadManifest(cut.after));
    if (after.chain.cut == 0) {
      return FailedPrecondition("checkpoint '" + cut.after +
                                "' is not part of a chain, so no increment can follow it (start "
                                "a chain with a base first)");
    }
    if (after.partitions != partitions) {
      return FailedPrecondition("checkpoint '" + cut.after + "' has " +
                                std::to_string(after.partitions) + " partitions, the cluster " +
                                std::to_string(partitions));
    }
    chaining.predecessor = ChainLink{cut.after, std::move(after)};
  } else if (cut.chain > 0) {
    chaining.chained = true;
    ASSIGN_OR_RETURN(chaining.predecessor, ChainPredecessor(cut.dir, cut.chain, partitions));
  }
  return chaining;
}

Result<Manifest> CheckpointServers(Client& client, const std::string& dir, uint64_t step,
                                   Millis timeout, const CheckpointChaining& chaining) {
  ASSIGN_OR_RETURN(const std::string absolute, CanonicalDirectory(dir, "checkpoint directory"));
  RETURN_IF_ERROR(MakeDirectories(absolute));
  // A checkpoint written here before (a run resumed from an earlier step cuts the same steps
  // again) must not lend this one its manifest or partition files: a partition written as a delta
  // now would sit beside its whole file of then.
  std::error_code error;
  std::filesystem::remove(absolute + "/" + kManifestName, error);
  if (!error) std::filesystem::remove_all(absolute + "/tables", error);
  if (error) {
    return Unavailable("cannot clear '" + absolute + "' of an earlier checkpoint: " +
                       error.message());
  }
  CutWrite write;
  if (chaining.chained) {
    write.cut = NewCutId();
    write.previous_cut =
        chaining.predecessor.has_value() ? chaining.predecessor->manifest.chain.cut : 0;
    write.track = true;
  }
  RETURN_IF_ERROR(client.Checkpoint(absolute, CheckpointAction::kWrite, timeout, write));
  const RoutingTable routing = client.routing();
  Manifest manifest;
  if (chaining.chained) manifest.chain = NextChainPlace(absolute, write.cut, chaining.predecessor);
  manifest.step = step;
  manifest.servers = static_cast<uint32_t>(routing.servers.size());
  manifest.partitions = routing.num_partitions;
  for (const TableSpec& spec : client.tables()) manifest.tables.push_back({spec.name, spec.dim});
  return manifest;
}

Result<CutInfo> RequestCheckpoint(const std::string& scheduler_endpoint,
                                  const TransportSecurity& security,
                                  CutRequest now, Millis timeout) {
  ASSIGN_OR_RETURN(now.dir, CanonicalDirectory(now.dir, "checkpoint directory"));
  if (!now.after.empty()) {
    ASSIGN_OR_RETURN(now.after, CanonicalDirectory(now.after, "checkpoint to extend"));
  }
  return SchedulerClient(scheduler_endpoint, security).CheckpointNow(now, timeout);
}

Result<Manifest> RestoreServers(Client& client, const std::string& dir, Millis timeout) {
  ASSIGN_OR_RETURN(const std::string absolute, CanonicalDirectory(dir, "checkpoint directory"));
  ASSIGN_OR_RETURN(std::vector<ChainLink> chain, ReadCheckpointChain(absolute, VerifyFiles::kYes));
  Manifest manifest = chain.back().manifest;
  for (const ChainLink& link : chain) {
    if (link.manifest.tables.size() != manifest.tables.size()) {
      return DataLoss("checkpoint '" + link.dir + "' of the chain ending at '" + absolute +
                      "' has other tables than its last checkpoint");
    }
  }
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
