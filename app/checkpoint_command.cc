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
