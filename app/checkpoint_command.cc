// `ember checkpoint`: asks a running cluster's scheduler for a consistent checkpoint and waits
// until the trainers and servers wrote it (protocol in scheduler/checkpoint_cuts.h).
#include <cstdio>

#include "app/command_support.h"
#include "app/commands.h"
#include "ps/client/checkpoint.h"

namespace ember::app {

int CheckpointCommand(int argc, char** argv) {
  const std::vector<FlagSpec> known = {
      {"scheduler", "ENDPOINT", "the running cluster's scheduler"},
      {"dir", "DIR", "where the checkpoint goes (a path every server and trainer can write)"},
      {"timeout-s", "S", "give up after S seconds (default 600)"},
  };
  int exit_code = 0;
  auto flags = ParseCommandFlags(
      argc, argv, "ember checkpoint --scheduler ENDPOINT --dir DIR",
      "Has every trainer stop after the same step, the servers write their partitions and the "
      "trainers their step, data position and dense state into DIR, then training goes on. "
      "Restore with `ember train --restore DIR` (or `ember cluster --restore DIR`).",
      known, &exit_code);
  if (!flags) return exit_code;
  if (!flags->Has("scheduler") || !flags->Has("dir")) {
    std::fprintf(stderr, "ember checkpoint: --scheduler and --dir are required\n");
    return 2;
  }
  auto timeout = flags->GetUint("timeout-s");
  if (!timeout.ok()) {
    std::fprintf(stderr, "ember checkpoint: %s\n", timeout.status().ToString().c_str());
    return 2;
  }
  auto cut = ps::RequestCheckpoint(flags->Get("scheduler"), flags->Get("dir"),
                                   Millis(1000 * timeout->value_or(600)));
  if (!cut.ok()) {
    std::fprintf(stderr, "ember checkpoint: %s\n", cut.status().ToString().c_str());
    return 1;
  }
  std::printf("checkpoint after step %llu written to %s\n",
              static_cast<unsigned long long>(cut->clock), cut->dir.c_str());
  return 0;
}

}  // namespace ember::app
