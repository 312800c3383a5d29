// ClockGrant and CutInfo: what the scheduler answers a trainer that completed a step in a
// synchronised run (bsp/ssp), and the checkpoint cuts it announces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ember {

// A checkpoint cut: the clock after which it is taken and where.
struct CutInfo {
  uint64_t clock = 0;      // 0: no cut
  std::string dir;
  uint32_t keep = 0;       // periodic cuts: newest step-* directories to keep beside dir; 0: all
  bool coordinate = false; // answer to an arrival: this trainer completes the cut
  uint32_t chain = 0;      // incremental: checkpoints a chain may hold (base included); 0: full
  std::string after;       // a checkpoint to extend as an increment (absolute); empty: none
};

// A checkpoint cut asked for (`ember checkpoint`): into `dir`, as an increment of the checkpoint
// `after`, or as the base of a chain (`chain`, no `after`); neither: a full checkpoint.
struct CutRequest {
  std::string dir;
  std::string after;
  bool chain = false;
};

struct ClockGrant {
  uint64_t clock = 0;
  std::vector<uint32_t> trainers;  // whose pushes of `clock` count
  uint64_t min_clock = 0;          // slowest live trainer's clock when granted
  CutInfo cut;                     // a cut announced for a later clock (cut.clock > clock), if any
  // The scheduler's signature of (clock, trainers, combine) (common/grant_signature.h), which
  // servers check before they apply the clock; empty without authentication.
  std::string signature;
};

}  // namespace ember
