// `ember export`: writes a checkpoint's tables (ps/checkpoint_export.h) and dense towers
// (trainer/trainer_checkpoint.h) as NumPy files for serving; from a running cluster it first has
// the cluster write a checkpoint.
#include <cstdio>

#include "app/commands.h"
#include "common/checkpoint_layout.h"
#include "common/file_io.h"
#include "ps/client/checkpoint.h"
#include "ps/client/checkpoint_export.h"
#include "trainer/trainer_checkpoint.h"

namespace ember::app {
namespace {

int Fail(const Status& status) { return PrintError("export", status); }

}  // namespace

int RunExport(const ExportFlags& flags) {
  if (flags.checkpoint.empty() && flags.scheduler.empty()) {
    return PrintError("export", InvalidArgument("one of --checkpoint or --scheduler is required"),
                      2);
  }
  auto out = CanonicalDirectory(flags.out, "--out");
  if (!out.ok()) return PrintError("export", out.status(), 2);
  std::string checkpoint;
  if (!flags.checkpoint.empty()) {
    auto given = CanonicalDirectory(flags.checkpoint, "--checkpoint");
    if (!given.ok()) return PrintError("export", given.status(), 2);
    auto found = FindCheckpoint(*given);  // or the newest step-* in it
    if (!found.ok()) return Fail(found.status());
    checkpoint = *found;
  } else {
    checkpoint = *out + "/checkpoint";
    auto security = ResolveSecurity(flags.security);
    if (!security.ok()) return PrintError("export", security.status(), 2);
    auto cut = ps::RequestCheckpoint(flags.scheduler, *security, checkpoint, Millis(600'000));
    if (!cut.ok()) return Fail(cut.status());
    std::printf("checkpoint after step %llu written to %s\n",
                static_cast<unsigned long long>(cut->clock), cut->dir.c_str());
  }
  if (Status exported = ps::ExportCheckpointTables(checkpoint, *out); !exported.ok()) {
    return Fail(exported);
  }
  auto manifest = ReadManifest(checkpoint);
  if (!manifest.ok()) return Fail(manifest.status());
  if (manifest->trainers > 0) {
    if (Status dense = trainer::ExportDenseWeights(checkpoint, *out); !dense.ok()) {
      return Fail(dense);
    }
  }
  return 0;
}

}  // namespace ember::app
