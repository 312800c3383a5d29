// PartitionMover: a server's thread that keeps in touch with the scheduler and runs the partition
// moves it is ordered to (scheduler/shard_moves.h decides them).
//
// Every heartbeat_interval it sends a heartbeat (also between the chunks of a move); the answer
// carries the routing table, the moves this server is the target of, the moves in flight out of
// it, and whether it may exit (it drained). The service applies the table and the moves out
// (ShardService::ApplyOrders): a source takes part only in the moves the scheduler named to it,
// and only with their targets (MovePlan). A move of partition p from server A to this server B,
// which B learns only after A did:
//   1. copy: B asks A for every row of p (all tables, with optimizer state), chunk by chunk so
//      that a partition of any size moves; A keeps serving p and notes the keys pushed into it
//      from now on; B loads the rows but does not serve p yet.
//   2. (the copy's bytes are paced to `bandwidth_bytes_per_second` so training keeps its network)
//   3. hand-over: A holds p (requests for it are answered "being handed over; retry", which
//      clients retry after a short wait) and sends the rows of the noted keys; B loads them.
//      In bsp, A hands over only between clocks, when it holds no deferred push of p (B asks
//      again every few ms until then), so each clock's pushes are applied where they arrived.
//   4. B writes the rows it loaded to its data directory, if it has one, and asks the scheduler
//      to commit. Committed: the routing table gives p to B at a new epoch, B serves p, and A
//      drops p once the routing table it hears from the scheduler says so (B's release asks A to
//      heartbeat at once). Refused (the move was aborted meanwhile): B drops what it loaded, and
//      A serves p again once the scheduler's answer no longer lists the move.
// A failure before the commit aborts the move the same way. If B dies after the hand-over, A's
// hold outlasts handover_timeout (a copy never followed by a hand-over, twice transfer_timeout);
// A then asks the scheduler to abort, and serves p again unless the commit came first, in which
// case it drops p. So each move is decided once, by the scheduler, and every push is applied by
// exactly one owner: before the hand-over by A (and copied), after the commit by B, and in
// between by nobody (retried). Neither end of a move changes anything on the other's word alone.
//
// Thread-safety: Run on one thread; the service's methods it calls are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "common/status.h"
#include "common/rpc_channel.h"
#include "common/silence_log.h"
#include "common/transport.h"
#include "common/wire.h"
#include "ps/server/shard_service.h"

namespace ember::ps {

struct MoverOptions {
  std::string scheduler_endpoint;
  Millis heartbeat_interval{200};
  Millis handover_timeout{10'000};     // a hold longer than this asks the scheduler to abort
  Millis transfer_timeout{120'000};    // one copy or hand-over request
  uint64_t bandwidth_bytes_per_second = 0;  // pacing of partition copies; 0: none
};

class PartitionMover {
 public:
  // `on_exit` runs (on the mover's thread) when the scheduler says the drained server may stop.
  PartitionMover(ShardService& service, Context& context, MoverOptions options,
                 std::function<void()> on_exit);

  // Heartbeats and runs moves until `stop` is set.
  void Run(const std::atomic<bool>& stop);

 private:
  // Sends a heartbeat and applies the routing table of its answer.
  Result<wire::ServerOrders> Heartbeat();
  // Heartbeat() when heartbeat_interval passed since the last one: a move that takes long
  // heartbeats between its chunks.
  void HeartbeatIfDue();
  // Runs one move as its target; errors are returned after the move was aborted.
  Status RunMove(const wire::MoveOrder& move, const RoutingTable& routing);
  // Asks the scheduler to commit, again while it does not answer (it may be restarting), for up
  // to transfer_timeout: rows whose commit may have been made must not be dropped on silence.
  Result<RoutingTable> Commit(const wire::MoveOrder& move);
  // Asks the scheduler for a decision; returns its routing table.
  Result<RoutingTable> Decide(const wire::MoveOrder& move, bool commit, const std::string& reason);
  // As the source: asks to abort moves whose hold outlasted handover_timeout (or whose copy
  // was never followed by a hand-over within twice transfer_timeout), then serves or drops each
  // partition as the scheduler's routing table says.
  void ResolveLongHolds();
  // Sleeps up to `duration`, waking early when `stop` is set or the service asks for a heartbeat.
  void Pause(Millis duration, const std::atomic<bool>& stop);

  ShardService& service_;
  Context& context_;
  const MoverOptions options_;
  std::function<void()> on_exit_;
  RpcChannel scheduler_;
  SilenceLog scheduler_silence_;
  std::chrono::steady_clock::time_point last_heartbeat_{};
};

}  // namespace ember::ps
