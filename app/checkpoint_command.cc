// `ember checkpoint`: asks a running cluster's scheduler for a consistent checkpoint and waits
// until the trainers and servers wrote it (protocol in scheduler/checkpoint_cuts.h).
#include <cstdio>

#include "app/commands.h"
#include "ps/client/checkpoint.h"

namespace ember::app {

int RunCheckpoint(const CheckpointFlags& flags) {
  auto security = ResolveSecurity(flags.security);
  if (!security.ok()) return PrintError("checkpoint", security.status(), 2);
  auto cut = ps::RequestCheckpoint(flags.scheduler, *security, flags.dir,
                                   Millis(1000 * flags.timeout_s));
  if (!cut.ok()) return PrintError("checkpoint", cut.status());
  std::printf("checkpoint after step %llu written to %s\n",
              static_cast<unsigned long long>(cut->clock), cut->dir.c_str());
  return 0;
}

}  // namespace ember::app
