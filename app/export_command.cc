// `ember export`: writes a checkpoint's tables (ps/checkpoint_export.h) and dense towers
// (trainer/trainer_checkpoint.h) as NumPy files for serving, and, given the job's config with
// interaction data, the raw-id maps of its id tables (trainer/raw_id_map.h); from a running
// cluster it first has the cluster write a checkpoint.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "app/commands.h"
#include "common/checkpoint_layout.h"
#include "common/file_io.h"
#include "ps/client/checkpoint.h"
#include "ps/client/checkpoint_export.h"
#include "trainer/data_config.h"
#include "trainer/raw_id_map.h"
#include "trainer/trainer_checkpoint.h"

namespace ember::app {
namespace {

constexpr CommandText kExportCommand = {
    .name = "export",
    .summary = "write a checkpoint's tables and dense towers as NumPy .npy files",
    .usage = "ember export (--checkpoint DIR | --scheduler ENDPOINT) --out DIR",
    .description =
        "Verifies a checkpoint and writes each table's keys (uint64, [n], ascending) and rows "
        "(float32, [n, dim]) as .npy files, and the dense towers as "
        "dense/<tower>.<layer>.{weight,bias}.npy (float32, [out, in] and [out]). With the job's "
        "--config and interaction data, also <table>.ids.tsv for the user and item id tables: "
        "raw_id<TAB>key per line, every id of the interaction file.",
};

void AddExportFlags(CLI::App* command, ExportFlags* flags) {
  CLI::Option* checkpoint =
      AddValue(command, "--checkpoint", &flags->checkpoint, "DIR",
               "checkpoint directory (with its MANIFEST), or a folder of periodic step-* "
               "checkpoints (the newest complete one)");
  AddSchedulerEndpointFlag(command, &flags->scheduler,
                           "instead: a running cluster, checkpointed into OUT/checkpoint first")
      ->excludes(checkpoint);
  AddValue(command, "--out", &flags->out, "DIR",
           "where to write <table>.keys.npy, <table>.rows.npy and dense/*.npy")
      ->required();
  AddSecurityFlags(command, &flags->security, /*can_bind=*/false);
  // The job's config: with interaction data, <table>.ids.tsv maps each raw id to its key.
  AddConfigFlags(command, &flags->config, /*required=*/false);
  AddDataRootFlag(command, &flags->config);
}

}  // namespace

Command MakeExportCommand(CLI::App& ember) {
  return MakeCommand(ember, kExportCommand, AddExportFlags, RunExport);
}

namespace {

int Fail(const Status& status) { return PrintError("export", status); }

// Writes the raw-id map of each id table of `config`'s interaction data that `manifest` holds.
Status ExportRawIdMaps(const local::ClusterConfig& config, const Manifest& manifest,
                       const std::string& out) {
  if (config.data.kind != "interactions") {
    std::fprintf(stderr, "export: no raw-id maps: the config's data is %s, not interactions\n",
                 config.data.kind.c_str());
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(auto data, trainer::LoadInteractions(config.data.interactions));
  for (const trainer::RawIdMap& map : trainer::RawIdMaps(*data, config.train)) {
    const bool exported = std::any_of(manifest.tables.begin(), manifest.tables.end(),
                                      [&](const ManifestTable& t) { return t.name == map.table; });
    if (!exported) {
      return InvalidArgument("the config's id table '" + map.table +
                             "' is not in the checkpoint: is it the job's config?");
    }
    RETURN_IF_ERROR(trainer::WriteRawIdMap(map, out));
    std::printf("raw-id map of %zu ids written to %s\n", map.ids.size(),
                trainer::RawIdMapPath(out, map.table).c_str());
  }
  return Status::Ok();
}

}  // namespace

int RunExport(const ExportFlags& flags) {
  if (flags.checkpoint.empty() && flags.scheduler.empty()) {
    return PrintError("export", InvalidArgument("one of --checkpoint or --scheduler is required"),
                      2);
  }
  auto out = CanonicalDirectory(flags.out, "--out");
  if (!out.ok()) return PrintError("export", out.status(), 2);
  std::optional<local::ClusterConfig> config;
  if (!flags.config.path.empty()) {
    auto loaded = LoadConfig(flags.config);
    if (!loaded.ok()) return PrintError("export", loaded.status(), 2);
    config = std::move(*loaded);
  }
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
    auto cut = ps::RequestCheckpoint(flags.scheduler, *security, {checkpoint, "", false},
                                     Millis(600'000));
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
  if (config) {
    if (Status maps = ExportRawIdMaps(*config, *manifest, *out); !maps.ok()) return Fail(maps);
  }
  return 0;
}

}  // namespace ember::app
