// Fuzzes the readers of partition rows: partition checkpoint files (embedding/partition_file.h,
// ReadPartitionFile, then the checks and the load into a table that a restore runs), the delta
// files of incremental checkpoints (ReadDeltaFile, its checks, then folding it into the rows of a
// whole file and loading them, as a chain's restore does) and the chunks of rows a partition move
// brings (ps::ShardService::LoadIncoming: the next chunk's offset, then the same payloads, one per
// table).
//
// The first byte picks the mode: 0 and 1 are FileMode (raw or sealed, fuzz/fuzz_support.h) for a
// partition file of table "user"; 2 and 3 feed the rest to LoadIncoming for partition
// kIncomingPartition (not served by this server), as the first chunk of a copy (2) or a later
// chunk (3); 4 and 5 are FileMode + 4 for a delta file of table "user".
// Corpus: fuzz/corpus/partition_file/.
#include <cstddef>
#include <cstdint>

#include "common/check.h"
#include "embedding/partition_file.h"
#include "fuzz/fuzz_support.h"
#include "ps/server/shard_service.h"

namespace ember::fuzz {
namespace {

constexpr uint32_t kIncomingPartition = kFuzzPartitions - 1;

void ReadFile(FileMode mode, std::string_view bytes) {
  const std::string path = WriteScratchFile(
      "part.bin", mode == FileMode::kSealedFile ? SealChecksummedFile(bytes) : std::string(bytes));
  auto rows = embedding::ReadPartitionFile(path);
  if (!rows.ok()) return;
  // A restore asks for each partition it serves, never for one past the table's partitions.
  const uint32_t partition = rows->partition % kFuzzPartitions;
  embedding::EmbeddingTable table(FuzzTables()[0], kFuzzPartitions);
  auto checked = embedding::ReadPartitionFile(table, partition, path);
  if (!checked.ok()) return;
  (void)embedding::LoadPartitionRows(table, partition, *checked);
}

void ReadDelta(FileMode mode, std::string_view bytes) {
  const std::string path = WriteScratchFile(
      "delta.bin", mode == FileMode::kSealedFile ? SealChecksummedFile(bytes) : std::string(bytes));
  auto delta = embedding::ReadDeltaFile(path);
  if (!delta.ok()) return;
  const uint32_t partition = delta->rows.partition % kFuzzPartitions;
  embedding::EmbeddingTable table(FuzzTables()[0], kFuzzPartitions);
  auto checked = embedding::ReadDeltaFile(table, partition, path);
  if (!checked.ok()) return;
  // Folded into the partition's rows as the base holds them (here: the rows the delta names,
  // initial, and one key twice over), then loaded.
  embedding::PartitionRows rows = embedding::EmptyPartitionRows(table, partition);
  const size_t floats = size_t{table.dim()} + table.state_floats();
  for (uint64_t key : checked->deleted) {
    rows.keys.push_back(key);
    rows.values.resize(rows.values.size() + floats, 0.5f);
  }
  if (!embedding::ApplyPartitionDelta(rows, *checked, path).ok()) return;
  (void)embedding::LoadPartitionRows(table, partition, rows);
}

void LoadIncoming(bool starts_copy, std::string_view bytes) {
  auto service = ps::ShardService::Create(0, FuzzTables(), FuzzRouting());
  EMBER_CHECK(service.ok(), service.status().ToString());
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  if ((*service)->LoadIncoming(kIncomingPartition, {data, bytes.size()}, starts_copy).ok()) {
    (*service)->Adopt(kIncomingPartition, (*service)->epoch() + 1);
  } else {
    (*service)->Discard(kIncomingPartition);
  }
}

void Fuzz(uint8_t mode, std::string_view rest) {
  switch (mode % 6) {
    case 0:
    case 1:
      ReadFile(static_cast<FileMode>(mode % 2), rest);
      break;
    case 2:
    case 3:
      LoadIncoming(mode % 6 == 2, rest);
      break;
    default:
      ReadDelta(static_cast<FileMode>(mode % 2), rest);
  }
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET_WITH_MODE(ember::fuzz::Fuzz)
