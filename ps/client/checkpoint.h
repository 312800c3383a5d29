// Checkpoints of a cluster, from the client side: the calls that make every server write, verify
// or load its share of a checkpoint directory (common/checkpoint_layout.h has the layout and the
// manifest), and the request for a cut at the scheduler.
//
// Thread-safety: the functions may run on any thread; they use the client's thread-safe calls.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/checkpoint_layout.h"
#include "common/clock_grant.h"
#include "common/millis.h"
#include "common/status.h"
#include "ps/client/client.h"

namespace ember::ps {

// Whether a checkpoint joins a chain of incremental checkpoints (common/checkpoint_layout.h).
struct CheckpointChaining {
  bool chained = false;                  // false: a full checkpoint outside any chain
  std::optional<ChainLink> predecessor;  // chained: the checkpoint extended; nullopt: a new base
};

// The chaining of `cut`: outside any chain, the increment of cut.after, or (cut.chain > 0) the
// next link of the newest chain beside cut.dir (ChainPredecessor). FailedPrecondition when
// cut.after is not a checkpoint of a chain.
Result<CheckpointChaining> ChainingOf(const CutInfo& cut, uint32_t partitions);

// Asks every server to write its partitions into `dir` (created if missing), as `chaining` says,
// then records the servers' part in `manifest` (step and trainer files are the caller's). The
// caller writes the manifest after its own files.
Result<Manifest> CheckpointServers(Client& client, const std::string& dir, uint64_t step,
                                   Millis timeout, const CheckpointChaining& chaining = {});
// Asks the scheduler at `scheduler_endpoint` for a checkpoint cut into now.dir (now.dir and
// now.after made absolute) and waits until the trainers and servers wrote it
// (SchedulerClient::CheckpointNow); returns the cut (its clock is the step).
Result<CutInfo> RequestCheckpoint(const std::string& scheduler_endpoint,
                                  const TransportSecurity& security,
                                  CutRequest now, Millis timeout);
// Verifies the checkpoint in `dir` with its whole chain (ReadCheckpointChain), checks that it
// fits the cluster (same partition count and tables), then asks every server to load its
// partitions.
Result<Manifest> RestoreServers(Client& client, const std::string& dir, Millis timeout);

}  // namespace ember::ps
