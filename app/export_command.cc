// `ember export`: writes a checkpoint's tables as NumPy files for serving (ps/checkpoint_export.h).
#include <cstdio>

#include "app/command_support.h"
#include "app/commands.h"
#include "ps/checkpoint_export.h"

namespace ember::app {

int ExportCommand(int argc, char** argv) {
  const std::vector<FlagSpec> known = {
      {"checkpoint", "DIR", "checkpoint directory (with its MANIFEST) to export"},
      {"out", "DIR", "where to write <table>.keys.npy and <table>.rows.npy"},
  };
  int exit_code = 0;
  auto flags = ParseCommandFlags(argc, argv, "ember export --checkpoint DIR --out DIR",
                                 "Verifies a checkpoint and writes each table's keys (uint64, "
                                 "[n], ascending) and rows (float32, [n, dim]) as .npy files.",
                                 known, &exit_code);
  if (!flags) return exit_code;
  if (!flags->Has("checkpoint") || !flags->Has("out")) {
    std::fprintf(stderr, "ember export: --checkpoint and --out are required\n");
    return 2;
  }
  Status exported = ps::ExportCheckpointTables(flags->Get("checkpoint"), flags->Get("out"));
  if (!exported.ok()) {
    std::fprintf(stderr, "ember export: %s\n", exported.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace ember::app
