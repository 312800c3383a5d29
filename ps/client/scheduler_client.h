// SchedulerClient: the calls a trainer or a tool makes to the scheduler, one typed method each.
//
//   membership  RegisterTrainer, GetRouting, GetClusterStatus, Drain
//   clocks      ReportClock, Leave, Heartbeat (synchronised runs, common/sync_options.h)
//   cuts        ArriveAtCut, FinishCut, CheckpointNow (protocol in scheduler/checkpoint_cuts.h)
//   barriers    Barrier
//
// Every call sends one request and waits for its answer up to `timeout`, sending it again every
// 2 s until answered, on the same connection, so that a scheduler restarted meanwhile (which
// treats a request sent again as the same one) answers it. Errors: Unavailable or
// DeadlineExceeded when the scheduler cannot be reached or does not answer in time, otherwise
// the scheduler's own status (its code kept); each names the call. The ps::Client owns one for
// its registration, routing refreshes and heartbeats, and lends it to the trainer
// (Client::scheduler()); `ember status`, `ember drain` and `ember checkpoint` make their own.
//
// Thread-safety: all methods may be called from any thread, also at once: each call in progress
// has a connection of its own (idle ones are kept for the next calls), so a trainer waiting for
// its clock grant holds up neither its heartbeats nor a routing refresh. The scheduler counts a
// barrier's arrivals by connection.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/transport_security.h"
#include "common/clock_grant.h"
#include "common/sync_options.h"
#include "common/cluster_status.h"
#include "common/millis.h"
#include "common/routing_table.h"
#include "common/status.h"
#include "common/table_spec.h"

namespace ember {

class Context;

namespace ps {

// What the scheduler tells a trainer that registers.
struct TrainerRegistration {
  uint32_t trainer_id = 0;
  uint64_t start_clock = 0;  // non-zero for a late joiner of a bsp/ssp run
  std::vector<TableSpec> tables;
  RoutingTable routing;  // ready
  SyncOptions sync;      // how the run's trainers synchronise (the scheduler's)
};

class SchedulerClient {
 public:
  // Calls go to the scheduler at `endpoint`; connections open on first use, authenticated with
  // `security` when it has keys.
  explicit SchedulerClient(std::string endpoint, TransportSecurity security = {});
  // Same, with the sockets made in `context` (shared with the caller's other sockets).
  SchedulerClient(std::string endpoint, std::shared_ptr<Context> context);
  ~SchedulerClient();
  SchedulerClient(const SchedulerClient&) = delete;
  SchedulerClient& operator=(const SchedulerClient&) = delete;

  const std::string& endpoint() const { return endpoint_; }

  // ---- Membership ----
  // Registers a trainer called `name` (the same name gets the same id again) and waits until the
  // cluster has formed, asking again every second while the scheduler does not answer;
  // DeadlineExceeded after `timeout`.
  Result<TrainerRegistration> RegisterTrainer(std::string_view name, Millis timeout);
  // The same for a read-only client (lookups): it takes no trainer slot and reports no clock; its
  // trainer_id is wire::kReaderId.
  Result<TrainerRegistration> RegisterReader(std::string_view name, Millis timeout);
  // The current routing table; Unavailable while the cluster has not formed.
  Result<RoutingTable> GetRouting(Millis timeout);
  Result<ClusterStatus> GetClusterStatus(Millis timeout);
  // Starts moving every partition off `server` (scheduler/shard_moves.h); returns at once.
  Status Drain(uint32_t server, Millis timeout);

  // ---- Clocks of synchronised runs ----
  // Reports that `trainer` completed step `clock` and waits until the scheduler lets it start the
  // next one (bsp/ssp); the grant lists whose pushes make up `clock`. Aborted when the run failed
  // (a trainer died under the stop policy).
  Result<ClockGrant> ReportClock(uint32_t trainer, uint64_t clock, Millis timeout);
  // `trainer` finished after `clock` steps: nobody waits for it any more.
  Status Leave(uint32_t trainer, uint64_t clock, Millis timeout = Millis(10'000));
  // `trainer` is alive (the scheduler declares a trainer silent for its trainer_timeout dead).
  Status Heartbeat(uint32_t trainer, Millis timeout);

  // ---- Checkpoint cuts ----
  // At the cut after `clock` (announced in a grant): `trainer` wrote its file and has no push in
  // flight; waits until every trainer did (answer with `coordinate` set: this one completes the
  // cut, then calls FinishCut) or the cut is over. A failed cut's error comes back as the status.
  Result<CutInfo> ArriveAtCut(uint32_t trainer, uint64_t clock, Millis timeout);
  // The coordinator's report: the servers' part and the manifest are written (`outcome` OK) or not.
  Status FinishCut(uint32_t trainer, uint64_t clock, const Status& outcome, Millis timeout);
  // Asks for a cut into now.dir (absolute) as soon as possible (now.after and now.chain: as an
  // increment or a base of a chain) and waits until the trainers and servers wrote it; returns
  // the cut (its clock is the step).
  Result<CutInfo> CheckpointNow(const CutRequest& now, Millis timeout);

  // ---- Barriers ----
  // Waits until `count` participants reached the barrier `name`.
  Status Barrier(std::string_view name, uint32_t count, Millis timeout);

 private:
  class Channels;
  Result<TrainerRegistration> Register(std::string_view name, bool reader, Millis timeout);
  // One call on a connection of its own: CallAndCheck (common/rpc_channel.h), sent again every
  // kResendEvery until answered or `timeout` passed.
  template <typename Body, typename Encode>
  Result<Body> Call(std::string_view what, Millis timeout, Encode&& encode);

  const std::string endpoint_;
  std::unique_ptr<Channels> channels_;
};

}  // namespace ps
}  // namespace ember
