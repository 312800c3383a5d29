// `ember export`: writes a checkpoint's tables (ps/checkpoint_export.h) and dense towers
// (trainer/trainer_checkpoint.h) as NumPy files for serving; from a running cluster it first has
// the cluster write a checkpoint.
#include <cstdio>
#include <filesystem>

#include "app/command_support.h"
#include "app/commands.h"
#include "ps/client/checkpoint.h"
#include "ps/client/checkpoint_export.h"
#include "trainer/trainer_checkpoint.h"

namespace ember::app {
namespace {

int Fail(const Status& status) {
  std::fprintf(stderr, "ember export: %s\n", status.ToString().c_str());
  return 1;
}

}  // namespace

int ExportCommand(int argc, char** argv) {
  const std::vector<FlagSpec> known = {
      {"checkpoint", "DIR", "checkpoint directory (with its MANIFEST), or a folder of periodic "
                            "step-* checkpoints (the newest complete one)"},
      {"scheduler", "ENDPOINT", "instead: a running cluster, checkpointed into OUT/checkpoint first"},
      {"out", "DIR", "where to write <table>.keys.npy, <table>.rows.npy and dense/*.npy"},
  };
  int exit_code = 0;
  auto flags = ParseCommandFlags(
      argc, argv, "ember export (--checkpoint DIR | --scheduler ENDPOINT) --out DIR",
      "Verifies a checkpoint and writes each table's keys (uint64, [n], ascending) and rows "
      "(float32, [n, dim]) as .npy files, and the dense towers as dense/<tower>.<layer>."
      "{weight,bias}.npy (float32, [out, in] and [out]).",
      known, &exit_code);
  if (!flags) return exit_code;
  if (flags->Has("checkpoint") == flags->Has("scheduler") || !flags->Has("out")) {
    std::fprintf(stderr, "ember export: --out and one of --checkpoint or --scheduler are "
                         "required\n");
    return 2;
  }
  std::string checkpoint;
  if (flags->Has("checkpoint")) {
    auto found = FindCheckpoint(flags->Get("checkpoint"));  // or the newest step-* in it
    if (!found.ok()) return Fail(found.status());
    checkpoint = *found;
  } else {
    checkpoint = flags->Get("out") + "/checkpoint";
    auto cut = ps::RequestCheckpoint(flags->Get("scheduler"), checkpoint, Millis(600'000));
    if (!cut.ok()) return Fail(cut.status());
    std::printf("checkpoint after step %llu written to %s\n",
                static_cast<unsigned long long>(cut->clock), cut->dir.c_str());
  }
  if (Status exported = ps::ExportCheckpointTables(checkpoint, flags->Get("out")); !exported.ok()) {
    return Fail(exported);
  }
  auto manifest = ReadManifest(checkpoint);
  if (!manifest.ok()) return Fail(manifest.status());
  if (manifest->trainers > 0) {
    if (Status dense = trainer::ExportDenseWeights(checkpoint, flags->Get("out")); !dense.ok()) {
      return Fail(dense);
    }
  }
  return 0;
}

}  // namespace ember::app
