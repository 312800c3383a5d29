// Raw-id maps: which key each original id of an interaction file became, for the tables the file
// fills by id, so that a serving system can look the rows of an export (`ember export`) or of a
// running cluster (`ember lookup`) up by the ids it knows.
//
// The id tables are the first user table and the first item table (slot 0 of each tower, whose
// key is the id's: trainer/interaction_dataset.h); side-feature slots have no map. A map holds
// every user (or item) of the file, in the order the file first names them, including ids whose
// key never got a row (a user with no training interaction).
//
// File format, OUT/<table>.ids.tsv: one line per id, `raw_id<TAB>key` with the key in decimal.
// An id holding a tab or a line break cannot be written (InvalidArgument naming it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/interaction_dataset.h"
#include "trainer/train_options.h"

namespace ember::trainer {

struct RawIdMap {
  std::string table;
  std::vector<std::string> ids;
  std::vector<uint64_t> keys;  // keys[i] is the key of ids[i]
};

// The maps of the id tables of `train` (user_tables[0], item_tables[0]) over `data`.
std::vector<RawIdMap> RawIdMaps(const InteractionDataset& data, const TrainOptions& train);

// OUT/<table>.ids.tsv.
std::string RawIdMapPath(const std::string& out_dir, const std::string& table);

// Writes `map` to RawIdMapPath(out_dir, map.table), atomically.
Status WriteRawIdMap(const RawIdMap& map, const std::string& out_dir);

// Reads a map written by WriteRawIdMap (its table named `table`); InvalidArgument naming the file
// and line for a line that is not `raw_id<TAB>key`, NotFound for a missing file.
Result<RawIdMap> ReadRawIdMap(const std::string& path, const std::string& table);

}  // namespace ember::trainer
