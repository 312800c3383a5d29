// ShardService: what one parameter server does with a request, independent of sockets.
//
// It holds the server's tables and its view of the routing table, answers pull, push, lookup,
// hint, stats, ping and checkpoint requests (writing or loading the files of its partitions:
// ShardCheckpoints), and, in bsp runs, holds deferred pushes until their clock is applied (see
// PushAccumulator).
// A push that names its sender is applied once however often it arrives: a copy of one already
// applied (a client resending what was in flight when its connection broke) is answered OK and
// applied no more (PushLedger, whose records are logged with the push's rows when the server
// logs pushes). A pull or push hashes each key to its partition once, in its table, which runs
// the ownership check (for a push: PushGate, with the ledger's claim) on the partitions before it
// touches any row. It turns every failure into an error response: an unknown table, a row-width
// mismatch, a key in a partition this server does not own (FailedPrecondition carrying the
// server's epoch, so the client refreshes its routing and retries), or an undecodable frame.
// A request over one of its limits (ShardPolicy::limits: keys per message, held bsp pushes,
// push-ledger senders) is refused with ResourceExhausted naming the limit, changes nothing and is
// counted in the stats; a push with a NaN or infinite gradient is refused or has those rows left
// out (ShardPolicy::non_finite), counted per table. Nothing a peer sends can make it abort.
//
// Thread-safety: Handle() may be called from many threads at once; tables lock per partition.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "common/limits.h"
#include "common/peer.h"
#include "common/routing_table.h"
#include "common/status.h"
#include "common/table_spec.h"
#include "common/wire.h"
#include "embedding/embedding_table.h"
#include "ps/server/followers.h"
#include "ps/server/lookahead_hints.h"
#include "ps/server/move_plan.h"
#include "ps/server/moves_out.h"
#include "ps/server/non_finite_gradients.h"
#include "ps/server/partition_ownership.h"
#include "ps/server/push_accumulator.h"
#include "ps/server/push_ledger.h"
#include "ps/server/shard_checkpoints.h"
#include "ps/server/shard_counters.h"
#include "ps/server/shard_tables.h"
#include "ps/server/transfer_source.h"

namespace ember::ps {

// Where a server keeps rows beyond its memory. The default keeps every row in memory only. When
// the store keeps a push log (RocksStoreOptions::log_pushes), a push is in it before it is
// acknowledged.
struct ShardStorage {
  embedding::RocksStore* store = nullptr;    // borrowed, outlives the service; null: memory only
  embedding::MemoryBudget* budget = nullptr;  // borrowed, outlives the service; null: no limit
  // Bytes of rows that look-ahead hints may pin in memory, shared evenly by the tables.
  uint64_t pin_budget_bytes = 0;
  // Where the tables' cold row files go, and their bytes, shared evenly by the tables (0: none).
  std::string cold_file_dir;
  uint64_t cold_file_bytes = 0;
};

// What a server accepts from its peers (common/limits.h) and does with non-finite gradients.
struct ShardPolicy {
  Limits limits;
  NonFinitePolicy non_finite = NonFinitePolicy::kRefuse;
  // A partition move's copy and hand-over go in chunks of about this many bytes of rows (at
  // least one row each), so a partition of any size moves in frames of bounded size.
  uint64_t transfer_chunk_bytes = uint64_t{32} << 20;
  // The key the scheduler signs bsp clock grants with (common/grant_signature.h), from the
  // registration. With authentication an apply-clock is applied only with its grant's valid
  // signature; without (the peer is insecure) it is not checked.
  std::string grant_key;
};

class ShardService {
 public:
  // Validates every spec; InvalidArgument names the bad table, ResourceExhausted more tables than
  // policy.limits.tables_per_server. With storage.store, every table gets a column family there,
  // and with its push log the records of applied pushes are read back from it (errors of
  // either are returned).
  static Result<std::unique_ptr<ShardService>> Create(uint32_t server_id,
                                                      const std::vector<TableSpec>& tables,
                                                      const RoutingTable& routing,
                                                      const ShardStorage& storage = {},
                                                      const ShardPolicy& policy = {});

  // Decodes one request frame from `peer` and returns the response frame. Never fails: errors are
  // encoded into the response (with the request's id, 0 only when the frame could not be read).
  Frame Handle(Frame request, const Peer& peer);

  uint32_t server_id() const { return server_id_; }
  uint64_t epoch() const { return ownership_.epoch(); }
  wire::ServerStats Stats() const;
  // Writes every changed row held in memory to the data directory (no-op without one).
  Status Flush();
  // Deletes the rows of tables with a TTL that were not updated for it; returns how many.
  Result<uint64_t> ExpireRows();
  // Whether any table has a TTL.
  bool has_expiry() const;
  // ---- Partition moves (shard_service_moves.cc; protocol in ps/server/partition_mover.h) ----
  // Target: loads one chunk that a partitionTransfer brought (rows of the copy, or rows changed
  // since it); the first chunk of a copy first drops whatever rows of the partition are here.
  // Returns the offset of the next chunk, 0 after the last. The partition is not served until
  // Adopt.
  Result<uint64_t> LoadIncoming(uint32_t partition, std::span<const uint8_t> chunk,
                                bool starts_copy);
  // Target: the move committed at `epoch`; serve the partition.
  void Adopt(uint32_t partition, uint64_t epoch);
  // Target: the move was aborted; drop what arrived.
  void Discard(uint32_t partition);
  // Source: the move committed (drop the partition's rows) or was aborted (serve it again).
  void Release(uint32_t partition);
  void Resume(uint32_t partition);
  // The scheduler's routing table: its epoch, and partitions whose commit answer was lost.
  void ApplyRouting(const RoutingTable& routing);
  // The scheduler's answer to a heartbeat sent at `asked_at`: ApplyRouting, the moves out of
  // this server in flight and planned (the only ones it takes part in: MovePlan), and the end of
  // each move out that the scheduler decided since: a partition the routing table gives to
  // another server is released, one whose copy began before `asked_at` and whose move is no
  // longer in flight (aborted) is served again.
  void ApplyOrders(const wire::ServerOrders& orders,
                   std::chrono::steady_clock::time_point asked_at = kLatest);
  static constexpr std::chrono::steady_clock::time_point kLatest =
      std::chrono::steady_clock::time_point::max();
  // Whether a peer's transfer asked this server to hear from the scheduler soon (a release or
  // resume, which it checks against the scheduler's answer rather than take on the peer's
  // word); clears the request.
  bool TakeHeartbeatRequest() { return transfer_source_.TakeHeartbeatRequest(); }
  // Source: partitions whose move out stalled (their target may be gone): copied longer ago than
  // `copy_limit` without a hand-over, or held longer than `hold_limit`.
  std::vector<uint32_t> StalledMovesOut(Millis copy_limit, Millis hold_limit) const;

  // What the server counted of its work (also refusals by its sockets), for its metrics.
  ShardCounters& counters() { return counters_; }
  const ShardCounters& counters() const { return counters_; }

 private:
  ShardService(uint32_t server_id, const RoutingTable& routing, const ShardPolicy& policy);

  // The dispatcher: checks that `peer` may send the request, then calls its kind's handler.
  Frame HandleDecoded(const wire::DecodedRequest& request, const Peer& peer);
  Frame HandlePull(const wire::RequestHeader& header, const wire::PullRequest& pull);
  // In shard_service_lookup.cc: a read-only pull; checked as a pull, changes nothing. And the
  // stream of changed rows to a serving replica (followers.h).
  Frame HandleLookup(const wire::RequestHeader& header, const wire::LookupRequest& lookup);
  Frame HandleFollow(const wire::RequestHeader& header, const wire::FollowRequest& follow);
  Frame HandlePush(const wire::RequestHeader& header, const wire::PushRequest& push,
                   const Peer& peer);
  // In shard_service_hints.cc: look-ahead (tiered servers: lookahead_hints.h). A hint is queued
  // for the prefetch thread (answered OK at once, or refused when limits.queued_hints wait); the
  // push that names it releases its pins.
  Frame HandleHint(const wire::RequestHeader& header, const wire::HintRequest& hint,
                   const Peer& peer);
  // Passes `push` (its rows checked for finite gradients) through the gate to its table.
  Frame ApplyPush(const wire::RequestHeader& header, const wire::PushRequest& push,
                  embedding::EmbeddingTable& table, const Peer& peer);
  // ResourceExhausted, counted, when a pull or push carries more than limits.keys_per_message.
  Status CheckKeyCount(std::string_view kind, const std::string& table, size_t keys);
  // In shard_service_clock.cc.
  Frame HandleApplyClock(const wire::RequestHeader& header, const wire::ApplyClockRequest& apply,
                         const Peer& peer);
  // Ends a move out of partition `p`: its state becomes `to`, nothing more is noted for it.
  void EndMoveOut(uint32_t p, PartitionState to);
  Frame Error(uint64_t request_id, const Status& status);
  // The status-only answer: OK, or Error.
  Frame Reply(uint64_t request_id, const Status& status);

  Result<embedding::EmbeddingTable*> FindTable(const std::string& name);

  const uint32_t server_id_;
  const ShardPolicy policy_;
  PartitionOwnership ownership_;
  ShardTables tables_;
  ShardCheckpoints checkpoints_;  // the tables' checkpoint files

  // Pulls, pushes and clock applies hold it shared; a partition changing state (copy, hand-over)
  // holds it exclusively, so no request is between its ownership check and its effect then.
  mutable std::shared_mutex transfer_mutex_;
  MovesOut outgoing_moves_;  // the moves out of this server under way (source side)
  // The moves out of this server that the scheduler planned, as its last heartbeat said.
  MovePlan plan_;
  PushAccumulator deferred_;  // bsp pushes waiting for their clock
  static constexpr std::chrono::milliseconds kFollowerIdleTimeout{60'000};
  Followers followers_;       // serving replicas' streams of changed rows
  std::unique_ptr<PushLedger> ledger_;  // which pushes were applied, by sender and request id

  ShardCounters counters_;
  TransferSource transfer_source_;  // this server's answers to partition transfers
  // Tiered servers: look-ahead. Last, so that its thread stops before anything it uses goes.
  std::unique_ptr<LookaheadHints> hints_;
};

}  // namespace ember::ps
