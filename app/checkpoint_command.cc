// `ember checkpoint`: asks a running cluster's scheduler for a consistent checkpoint (full, or a
// base or increment of a chain) and waits until the trainers and servers wrote it (protocol in
// scheduler/checkpoint_cuts.h); or, with --compact, folds a chain into a new base from its files.
#include <cstdio>

#include "app/commands.h"
#include "common/checkpoint_layout.h"
#include "common/file_io.h"
#include "ps/client/checkpoint.h"
#include "ps/client/checkpoint_compact.h"

namespace ember::app {
namespace {

constexpr CommandText kCheckpointCommand = {
    .name = "checkpoint",
    .summary = "have a running cluster write a consistent checkpoint",
    .usage = "ember checkpoint --scheduler ENDPOINT --dir DIR [--chain | --after PREV]\n"
             "       ember checkpoint --compact CHECKPOINT [--out DIR]",
    .description =
        "Has every trainer stop after the same step, the servers write their partitions and the "
        "trainers their step, data position and dense state into DIR, then training goes on. "
        "Restore with `ember train --restore DIR` (or `ember cluster --restore DIR`). "
        "--chain writes the base of a chain of incremental checkpoints; --after PREV an increment "
        "of the chain checkpoint PREV, holding only the rows changed since PREV (and the keys "
        "deleted since). --compact folds the chain that ends at CHECKPOINT (or at the newest "
        "step-* in it) into a new base, from the files alone, while the cluster trains on.",
};

void AddCheckpointCommandFlags(CLI::App* command, CheckpointFlags* flags) {
  AddSchedulerEndpointFlag(command, &flags->scheduler);
  AddValue(command, "--dir", &flags->dir, "DIR",
           "where the checkpoint goes (a path every server and trainer can write)");
  auto* chain = command->add_flag("--chain", flags->chain,
                                  "write the base of a chain of incremental checkpoints");
  AddValue(command, "--after", &flags->after, "PREV",
           "write an increment of the chain checkpoint PREV")
      ->excludes(chain);
  auto* compact = AddValue(command, "--compact", &flags->compact, "CHECKPOINT",
                           "fold the chain ending at CHECKPOINT into a new base (no cluster)");
  AddValue(command, "--out", &flags->out, "DIR",
           "--compact: where the base goes (default: CHECKPOINT.base beside it)")
      ->needs(compact);
  AddCount(command, "--timeout-s", &flags->timeout_s, "S", "give up after S seconds (default 600)");
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
}

}  // namespace

Command MakeCheckpointCommand(CLI::App& ember) {
  return MakeCommand(ember, kCheckpointCommand, AddCheckpointCommandFlags, RunCheckpoint);
}

namespace {

int RunCompact(const CheckpointFlags& flags) {
  auto given = CanonicalDirectory(flags.compact, "--compact");
  if (!given.ok()) return PrintError("checkpoint", given.status(), 2);
  auto found = FindCheckpoint(*given);  // or the newest step-* in it
  if (!found.ok()) return PrintError("checkpoint", found.status());
  const std::string out = flags.out.empty() ? ps::DefaultCompactionDir(*found) : flags.out;
  auto folded = ps::CompactCheckpoint(*found, out);
  if (!folded.ok()) return PrintError("checkpoint", folded.status());
  std::printf("folded a chain of %u checkpoints ending at %s (step %llu) into the base %s "
              "(%llu bytes)\n",
              folded->folded, found->c_str(), static_cast<unsigned long long>(folded->step),
              folded->dir.c_str(), static_cast<unsigned long long>(folded->bytes));
  return 0;
}

}  // namespace

int RunCheckpoint(const CheckpointFlags& flags) {
  if (!flags.compact.empty()) {
    if (!flags.scheduler.empty() || !flags.dir.empty() || flags.chain || !flags.after.empty()) {
      return PrintError("checkpoint",
                        InvalidArgument("--compact works on files alone; it takes no "
                                        "--scheduler, --dir, --chain or --after"),
                        2);
    }
    return RunCompact(flags);
  }
  if (flags.scheduler.empty() || flags.dir.empty()) {
    return PrintError("checkpoint",
                      InvalidArgument("--scheduler and --dir are required (or --compact)"), 2);
  }
  auto security = ResolveSecurity(flags.security);
  if (!security.ok()) return PrintError("checkpoint", security.status(), 2);
  auto cut = ps::RequestCheckpoint(flags.scheduler, *security,
                                   {flags.dir, flags.after, flags.chain},
                                   Millis(1000 * flags.timeout_s));
  if (!cut.ok()) return PrintError("checkpoint", cut.status());
  std::printf("checkpoint after step %llu written to %s\n",
              static_cast<unsigned long long>(cut->clock), cut->dir.c_str());
  return 0;
}

}  // namespace ember::app
