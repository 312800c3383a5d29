// Fuzzes the replay of the push log (embedding/push_log.h) that a killed server left in its data
// directory: the record framing and checksums (PushLog::Replay), and the write batches of intact
// records applied to a RocksDB store with the fuzz tables (RocksStore::Open).
//
// The first byte picks the mode: 0 replays the rest as the only segment without applying it, 1
// opens a store whose log holds the rest as its only segment. Checksums are fixed first in mode 1
// when the input's records frame correctly, so that the batch decoding is reached.
// Corpus: fuzz/corpus/push_log/.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>

#include "common/file_io.h"
#include "embedding/embedding_table.h"
#include "embedding/push_log.h"
#include "embedding/rocks_store.h"
#include "fuzz/fuzz_support.h"

namespace ember::fuzz {
namespace {

constexpr char kStore[] = "push-log-store";

// Segment 1 with each framed record's checksum set to match its payload.
std::string SealRecords(std::string segment) {
  size_t at = 0;
  while (segment.size() - at >= 8) {
    uint32_t size;
    std::memcpy(&size, segment.data() + at, sizeof(size));
    if (size > segment.size() - at - 8) break;
    const uint32_t crc =
        embedding::PushLog::RecordChecksum(1, std::string_view(segment.data() + at + 8, size));
    std::memcpy(segment.data() + at + 4, &crc, sizeof(crc));
    at += 8 + size;
  }
  return segment;
}

void Fuzz(uint8_t mode, std::string_view rest) {
  ClearScratch(kStore);
  const std::string store = ScratchDir() + "/" + kStore;
  const std::string log_dir = store + "/ember-pushlog";
  if (!MakeDirectories(log_dir).ok()) return;
  const std::string segment = mode % 2 == 0 ? std::string(rest) : SealRecords(std::string(rest));
  WriteScratchFile(std::string(kStore) + "/ember-pushlog/000000000001.pushlog", segment);
  if (mode % 2 == 0) {
    (void)embedding::PushLog::Replay(log_dir, [](std::string_view) { return Status::Ok(); });
    return;
  }
  std::map<std::string, uint32_t> tables;
  for (const TableSpec& spec : FuzzTables()) {
    tables[spec.name] = embedding::EmbeddingTable::PersistedFloatsPerRow(spec);
  }
  (void)embedding::RocksStore::Open({store}, tables);
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET_WITH_MODE(ember::fuzz::Fuzz)
