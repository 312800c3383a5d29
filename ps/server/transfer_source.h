// TransferSource: a server's answers, as the source of partition moves, to partition-transfer
// requests (protocol in ps/server/partition_mover.h). Each is checked against the scheduler's plan
// (MovePlan) and the partition's state and changes nothing when refused; a copy or hand-over
// begins at its first chunk and is sent chunk by chunk (MovesOut); a release or resume is left to
// the scheduler's answer to the server's next heartbeat.
//
// A copy or hand-over goes in chunks of about ShardPolicy::transfer_chunk_bytes: when the phase
// starts (offset 0), the source lists the keys to send (every row of the partition, or the rows
// changed since the copy) and answers chunk after chunk of that list, each request naming the
// offset the previous reply gave. Chunk payload: u64 offset of the next chunk (0: this is the
// last), u32 table count (0 or 1), then per table the payload of a partition file
// (embedding/partition_file.h) with the chunk's rows.
//
// Thread-safety: Answer may be called from many threads at once; it holds the server's transfer
// lock exclusively while a partition changes state.
#pragma once

#include <atomic>
#include <cstdint>
#include <shared_mutex>
#include <string>

#include "common/peer.h"
#include "common/status.h"
#include "common/transport.h"
#include "common/wire_moves.h"
#include "ps/server/move_plan.h"
#include "ps/server/moves_out.h"
#include "ps/server/partition_ownership.h"
#include "ps/server/push_accumulator.h"
#include "ps/server/shard_counters.h"
#include "ps/server/shard_tables.h"

namespace ember::ps {

class TransferSource {
 public:
  // The parts of the server it answers for, borrowed: each outlives this object.
  struct Server {
    uint32_t id = 0;
    uint64_t chunk_bytes = 0;  // about this many bytes of rows per chunk (at least one row)
    const ShardTables* tables = nullptr;
    PartitionOwnership* ownership = nullptr;
    MovesOut* moves = nullptr;  // the moves out under way
    const MovePlan* plan = nullptr;
    const PushAccumulator* deferred = nullptr;  // held bsp pushes delay a hand-over
    // Held exclusively while a partition changes state (no push between its check and its note).
    std::shared_mutex* transfer_mutex = nullptr;
    ShardCounters* counters = nullptr;  // counts the transfers refused
  };

  explicit TransferSource(const Server& server) : server_(server) {}

  // The answer to `transfer` (request `request_id`) from `peer`: a chunk of rows, or OK (a resume,
  // or a release with nothing under way); else the error the request is answered with.
  Result<Frame> Answer(uint64_t request_id, const wire::PartitionTransferRequest& transfer,
                       const Peer& peer);
  // Whether a release or resume asked the server to hear from the scheduler soon (which it
  // checks against the scheduler's answer rather than take on the peer's word); clears the
  // request.
  bool TakeHeartbeatRequest() { return heartbeat_requested_.exchange(false); }

 private:
  // Whether the scheduler's plan (MovePlan) lets `peer` take the step `transfer` asks for: a copy
  // or hand-over only of a move in flight out of this server, by its target, and the same move
  // as the one under way; a release or resume only by the target of the move under way.
  // Refusals are logged and counted, and change nothing.
  Status CheckPlannedMove(const wire::PartitionTransferRequest& transfer, const Peer& peer);
  // The first chunk of a copy of partition `p` (in `state`) out of this server: it is marked
  // copying (pushes from now on are noted) and its keys are listed for the chunks.
  Status BeginCopyOut(uint32_t p, PartitionState state, const std::string& where);
  // The first chunk of a hand-over: the partition, copied, stops being served here and the keys
  // pushed since the copy began are listed for the chunks (again, for a repeated hand-over).
  Status BeginHandOver(uint32_t p, PartitionState state, const std::string& where);
  // A release or resume that the target asked for. Neither changes anything on its own: the
  // server asks the scheduler at once (its next heartbeat), whose answer ends the move
  // (ShardService::ApplyOrders). A release is answered Unavailable until then.
  Result<Frame> AnswerMoveEnd(uint64_t request_id, uint32_t p, wire::TransferPhase phase);
  // The reply with the chunk of partition `p`'s outgoing rows at `offset`.
  Result<Frame> TransferChunk(uint64_t request_id, uint32_t p, wire::TransferPhase phase,
                              uint64_t offset);

  const Server server_;
  std::atomic<bool> heartbeat_requested_{false};
};

}  // namespace ember::ps
