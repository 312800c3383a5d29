// SchedulerState: what the scheduler keeps in its data directory so that, killed and started
// again, it goes on where it stopped: the endpoint it listened on, the servers and the routing
// table, each server's state and the partition moves in flight, the trainers (names, ids, the
// keys they registered with, clocks), the checkpoint cuts pending or under way, and the outcome of
// the last cut. Not kept: barrier arrivals and requests waiting for their answer (their senders
// ask again), when each member was last heard from (a restart counts as hearing from everyone).
//
// The file is DIR/scheduler.state, a checksummed file (common/checksummed_file.h) replaced
// atomically; the scheduler writes it before it answers any request that changed more than clocks
// (the clocks are saved as they stand then, and count as stale after a restart). Decoding
// checks every count against the bytes left and every id against the servers and partitions,
// and fails with DataLoss naming what is wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_io.h"
#include "common/routing_table.h"
#include "common/status.h"
#include "common/table_spec.h"
#include "scheduler/checkpoint_cuts.h"
#include "scheduler/shard_moves.h"
#include "scheduler/trainer_clocks.h"

namespace ember::scheduler {

struct SchedulerState {
  std::string endpoint;           // where it listened: a restart with a wildcard port binds it
  uint32_t num_partitions = 0;
  uint64_t tables_fingerprint = 0;  // TablesFingerprint of the config it ran with
  std::vector<ServerInfo> servers;  // registered (servers[i].id == i)
  uint64_t epoch = 0;               // 0: the cluster had not formed
  std::vector<uint32_t> owners;     // by partition; empty before the cluster formed
  ShardMoves::Saved moves;
  struct Trainer {
    std::string name;
    uint32_t id = 0;
    std::string key;  // the public key it registered with; empty without authentication
  };
  std::vector<Trainer> trainers;
  TrainerClocks::Saved clocks;
  CheckpointCuts::Saved cuts;
  uint32_t cut_coordinator = 0;
  uint64_t cuts_completed = 0;
  uint64_t cuts_failed = 0;
  uint64_t last_cut_clock = 0;  // the last cut that ended (0: none) and its error (empty: written)
  std::string last_cut_error;
};

// Names, widths, seeds and optimizers of the tables: a data directory of another job's
// scheduler is refused at start.
uint64_t TablesFingerprint(const std::vector<TableSpec>& tables);

// The file's payload. Without clocks, every trainer's clock and the highest clock are written
// as 0: what the scheduler compares to decide whether a change needs saving.
std::string EncodeSchedulerState(const SchedulerState& state, bool with_clocks = true);
Result<SchedulerState> DecodeSchedulerState(std::string_view payload);

// DIR/scheduler.state.
std::string SchedulerStatePath(const std::string& dir);
// Writes an encoded state atomically; with Flush::kNow it is on disk when this returns.
Status SaveSchedulerState(const std::string& dir, std::string_view payload, Flush flush);
// The saved state, nullopt when DIR holds none; DataLoss for a damaged file.
Result<std::optional<SchedulerState>> LoadSchedulerState(const std::string& dir);

}  // namespace ember::scheduler
