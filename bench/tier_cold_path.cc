// The cold path's floor: timed RocksDB reads and write-backs of stored rows, and the line that
// reports them beside a plain file's (tier_cold_path.h).
#include "bench/tier_cold_path.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/internal/process_usage.h"
#include "common/string_printf.h"

namespace ember::bench {
namespace {

// Rows the write-back phase cycles through (read once before it).
constexpr uint64_t kWrittenRows = 1 << 16;

double ThisThreadCpuSeconds() { return ThreadCpuSeconds(gettid()); }

// Keys with their partitions.
struct KeyBatch {
  std::vector<uint32_t> partitions;
  std::vector<uint64_t> keys;
};
// `count` keys drawn uniformly from the stored rows 0..rows-1 (with repeats), into `batch`.
void DrawKeys(uint64_t rows, uint32_t count, const embedding::EmbeddingTable& shape,
              std::mt19937_64& random, KeyBatch& batch) {
  batch.keys.resize(count);
  for (uint64_t& key : batch.keys) key = random() % rows;
  batch.partitions.resize(count);
  for (uint32_t i = 0; i < count; ++i) batch.partitions[i] = shape.PartitionOf(batch.keys[i]);
}

// CPU per row read by this thread, in MultiGets of `batch_size` random stored rows.
Result<double> TimeReads(uint64_t rows, uint32_t batch_size, const embedding::RocksTable& disk,
                         const embedding::EmbeddingTable& shape, double seconds) {
  std::mt19937_64 random(batch_size);
  KeyBatch batch;
  uint64_t read = 0, found = 0;
  const double cpu_before = ThisThreadCpuSeconds();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    DrawKeys(rows, batch_size, shape, random, batch);
    RETURN_IF_ERROR(disk.MultiGet(batch.partitions, batch.keys,
                                  [&](size_t, std::span<const float>) { ++found; }));
    read += batch_size;
  }
  if (found != read) return Internal("a stored row of the cold-path measurement was not found");
  return 1e6 * (ThisThreadCpuSeconds() - cpu_before) / std::max<uint64_t>(1, read);
}

// Process CPU per row written back, in batches of rows read before (their stored values), sorted
// once before the clock starts so that every batch is a run of keys in RocksDB's order.
Result<double> TimeWrites(uint64_t rows, embedding::RocksTable& disk,
                          const embedding::EmbeddingTable& shape, double seconds) {
  const uint32_t floats = disk.floats_per_row();
  std::mt19937_64 random(kWrittenRows);
  KeyBatch kept;
  DrawKeys(rows, static_cast<uint32_t>(std::min(rows, kWrittenRows)), shape, random, kept);
  std::vector<std::pair<uint32_t, uint64_t>> sorted(kept.keys.size());
  for (size_t i = 0; i < sorted.size(); ++i) sorted[i] = {kept.partitions[i], kept.keys[i]};
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) std::tie(kept.partitions[i], kept.keys[i]) = sorted[i];
  std::vector<float> values(kept.keys.size() * floats);
  RETURN_IF_ERROR(
      disk.MultiGet(kept.partitions, kept.keys, [&](size_t i, std::span<const float> row) {
        std::copy(row.begin(), row.end(), values.begin() + i * floats);
      }));
  embedding::RowWrites writes(disk);
  uint64_t written = 0;
  const double cpu_before = ProcessCpuSeconds();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (size_t at = 0; std::chrono::steady_clock::now() < deadline; at += kColdWriteBatch) {
    const size_t begin = at % (kept.keys.size() - kColdWriteBatch + 1);
    for (size_t row = begin; row < begin + kColdWriteBatch; ++row) {
      writes.Put(kept.partitions[row], kept.keys[row],
                 std::span<const float>(values.data() + row * floats, floats));
    }
    RETURN_IF_ERROR(disk.Write(writes));
    written += kColdWriteBatch;
  }
  return 1e6 * (ProcessCpuSeconds() - cpu_before) / std::max<uint64_t>(1, written);
}

}  // namespace

Result<ColdPathFigures> MeasureColdPath(uint64_t rows, embedding::RocksTable& disk,
                                        const embedding::EmbeddingTable& shape, double seconds) {
  if (rows < kColdWriteBatch) {
    return InvalidArgument("the cold path needs at least " + std::to_string(kColdWriteBatch) +
                           " rows, got " + std::to_string(rows));
  }
  ColdPathFigures figures;
  ASSIGN_OR_RETURN(figures.read_us, TimeReads(rows, kColdReadBatch, disk, shape, seconds));
  ASSIGN_OR_RETURN(figures.stripe_read_us,
                   TimeReads(rows, kColdStripeReadBatch, disk, shape, seconds));
  ASSIGN_OR_RETURN(figures.write_us, TimeWrites(rows, disk, shape, seconds));
  return figures;
}

std::string ColdPathLine(const ColdPathFigures& cold, const FilePathFigures& file) {
  return StringPrintf(
      "  the cold path alone (RocksDB, no table): a stored row read in %.2f us of CPU (%.2f us "
      "in MultiGets of %u, a stripe's share of a request's misses), written back in %.2f us "
      "(the process's CPU, RocksDB's threads included, in sorted batches of %u); a plain file of "
      "the rows in the page cache: a row read with pread in %.2f us, written in %.2f us (pwrite of "
      "%u rows at the file's next place; an empty system call %.2f us)",
      cold.read_us, cold.stripe_read_us, kColdStripeReadBatch, cold.write_us, kColdWriteBatch,
      file.read_us, file.write_us, kFileWriteBatch, file.syscall_us);
}

double ColdPathFloorNs(double memory_ns, double reads, double read_us, double writes,
                       double write_us) {
  return memory_ns + 1e3 * (reads * read_us + writes * write_us);
}

}  // namespace ember::bench
