// Export of a checkpoint's tables for serving: per table, OUT/<table>.keys.npy (uint64, shape
// [n], ascending) and OUT/<table>.rows.npy (float32, shape [n, dim], row i belongs to key i),
// without optimizer state. The checkpoint is verified first, with its whole chain when it is an
// increment (ReadCheckpointChain), so a damaged one exports nothing. One table is held in memory
// at a time.
#pragma once

#include <string>

#include "common/status.h"

namespace ember::ps {

Status ExportCheckpointTables(const std::string& checkpoint_dir, const std::string& out_dir);

}  // namespace ember::ps
