// ShardCheckpoints: a parameter server's part of a checkpoint, as a checkpoint request asks: it
// writes the files of the partitions the server serves (whole, or as deltas of a chain of cuts:
// common/checkpoint_layout.h), verifies them, or restores the tables from them
// (embedding/partition_file.h).
//
// Thread-safety: no state of its own; the tables lock their rows.
#pragma once

#include <cstdint>
#include <string>

#include "common/checkpoint_layout.h"
#include "common/status.h"
#include "common/wire_moves.h"
#include "ps/server/partition_ownership.h"
#include "ps/server/shard_tables.h"

namespace ember::ps {

class ShardCheckpoints {
 public:
  // `tables` and `ownership` are the server's, borrowed: they outlive this object.
  ShardCheckpoints(uint32_t server_id, const ShardTables& tables,
                   const PartitionOwnership& ownership)
      : server_id_(server_id), tables_(tables), ownership_(ownership) {}

  // Writes, verifies or restores the checkpoint in `checkpoint.dir` and logs how it went.
  // InvalidArgument when the directory is not an absolute path in normal form, else the error of
  // the action.
  Status Run(const wire::CheckpointRequest& checkpoint);

 private:
  // Writes every owned partition as `write` says: whole, or as a delta where its changes since
  // write.previous_cut are tracked.
  Status Write(const std::string& dir, const CutWrite& write);
  // Reads and checks every owned partition's file; changes nothing.
  Status Verify(const std::string& dir);
  // Verify, then loads every owned partition from its chain's files; a checkpoint of a chain
  // starts tracking the partitions' changes from its cut.
  Status Restore(const std::string& dir);

  const uint32_t server_id_;
  const ShardTables& tables_;
  const PartitionOwnership& ownership_;
};

}  // namespace ember::ps
