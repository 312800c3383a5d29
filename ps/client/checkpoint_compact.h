// Compaction of a chain of incremental checkpoints (common/checkpoint_layout.h): the chain that
// ends at a checkpoint folded into one new base, read from the files alone, so it runs while the
// cluster trains on.
//
// The base holds every partition's rows as of the chain's last checkpoint, that checkpoint's
// trainer files, its step and its cut id: the servers tracked their changes from that cut, so the
// next increment may extend the base instead. It is written under a hidden name beside `out` and
// renamed into place once complete, so no reader ever sees half of it.
//
// Thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <string>

#include "common/checkpoint_layout.h"
#include "common/status.h"

namespace ember::ps {

struct Compaction {
  std::string dir;         // the new base
  uint32_t folded = 0;     // checkpoints of the chain folded into it
  uint64_t step = 0;
  uint64_t bytes = 0;      // bytes of the base's files
};

// The default place of the base folded from the chain ending at `dir`: `dir`.base beside it (for
// periodic checkpoints, a name that sorts after dir and before the next step).
std::string DefaultCompactionDir(const std::string& dir);
// Folds the chain ending at the checkpoint in `dir` (verified first, every file of every link)
// into a new base in `out`. FailedPrecondition when `out` exists; errors of the chain name its link.
Result<Compaction> CompactCheckpoint(const std::string& dir, const std::string& out);

}  // namespace ember::ps
