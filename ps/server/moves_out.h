// MovesOut: the source side of the partitions moving out of a server, as ShardService serves
// them (protocol in ps/server/partition_mover.h). For each move under way it keeps the target the
// scheduler's plan named when the copy began, when the move entered its phase, and the keys its
// chunks send (the partition's keys as its copy began, or, from its hand-over on, those its tables
// noted as changed since: EmbeddingTable::MoveChanges). It sets the partitions' states in the
// server's PartitionOwnership as moves begin, hand over and end.
//
// Thread-safety: every method may be called from many threads at once (one mutex). The caller
// holds its transfer lock exclusively around BeginCopy, BeginHandOver and End (and the tables'
// move marks it sets with them), so that no push is between its ownership check and its rows then.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/millis.h"
#include "common/status.h"
#include "common/wire_moves.h"
#include "ps/server/partition_ownership.h"

namespace ember::ps {

class MovesOut {
 public:
  // A table's keys, ascending.
  using TableKeys = std::vector<std::pair<std::string, std::vector<uint64_t>>>;
  // One chunk of a transfer: the rows of `keys` of `table` (none when `table` is empty), and the
  // offset of the next chunk (0: this is the last).
  struct Chunk {
    std::string table;
    std::vector<uint64_t> keys;
    uint64_t next = 0;
  };

  // `ownership` is borrowed: the server's partition states.
  explicit MovesOut(PartitionOwnership& ownership) : ownership_(ownership) {}

  // Partition `p` (owned, or already copying: a copy begun again) starts its copy to `target`:
  // it is marked copying.
  void BeginCopy(uint32_t p, uint32_t target);
  // The keys the copy of `p` sends, listed once it was marked copying.
  void SetCopyKeys(uint32_t p, TableKeys keys);
  // The hand-over of `p` (copying, or handed over already: a repeated hand-over sends the same
  // rows again): it stops being served, and its chunks send `changed`, the keys its tables noted
  // as changed since the copy began (ignored on a repeated hand-over).
  void BeginHandOver(uint32_t p, TableKeys changed);
  // The chunk of `p`'s transfer in `phase` at `offset`, at most rows_per_chunk(table) rows;
  // FailedPrecondition when no such transfer is under way, InvalidArgument for an offset past it.
  // `what` names the request in errors.
  Result<Chunk> NextChunk(uint32_t p, wire::TransferPhase phase, uint64_t offset,
                          const std::function<uint64_t(const std::string&)>& rows_per_chunk,
                          const std::string& what) const;
  // The target of `p`'s move under way, if any.
  std::optional<uint32_t> TargetOf(uint32_t p) const;
  // Ends `p`'s move: its state becomes `to`, nothing more is noted or sent for it.
  void End(uint32_t p, PartitionState to);

  // The moves under way: partition -> (target, when its copy began).
  std::map<uint32_t, std::pair<uint32_t, std::chrono::steady_clock::time_point>> UnderWay() const;
  // The moves in one phase for longer than its limit: a copy (or the chunks of a hand-over not
  // yet asked for) over `copy_limit`, a partition handed over but not released over `hold_limit`.
  std::vector<uint32_t> Stalled(Millis copy_limit, Millis hold_limit) const;

 private:
  struct Move {
    uint32_t target = 0;
    std::chrono::steady_clock::time_point copy_began;
    std::chrono::steady_clock::time_point phase_began;
  };
  // What a move sends in chunks.
  struct Outgoing {
    wire::TransferPhase phase = wire::TransferPhase::kCopy;
    TableKeys tables;    // tables with rows only
    uint64_t total = 0;  // keys over all tables
  };

  PartitionOwnership& ownership_;
  mutable std::mutex mu_;  // guards what follows
  std::map<uint32_t, Move> moves_;
  std::map<uint32_t, Outgoing> outgoing_;
};

}  // namespace ember::ps
