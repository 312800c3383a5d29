// The cold row file alone: timed batches of finds and stores, and the stores after a writeback
// (tier_cold_file.h).
#include "bench/tier_cold_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "bench/internal/process_usage.h"
#include "embedding/cold_row_file.h"

namespace ember::bench {
namespace {

using embedding::ColdRowFile;

constexpr uint32_t kPartitions = 1024;
// The file measured is at most this large, so that a run of a large table stays short.
constexpr uint64_t kMaxFileBytes = uint64_t{512} << 20;
// Random keys drawn for the timed batches.
constexpr size_t kBatches = 8192;

uint32_t PartitionOfKey(uint64_t key) { return static_cast<uint32_t>(key % kPartitions); }

// Batches of random keys below `rows`, drawn before the clock starts and cycled through.
struct KeyBatches {
  std::vector<uint64_t> keys;
  std::vector<uint32_t> partitions;
  KeyBatches(uint64_t rows, size_t batches) : keys(batches * kColdFileBatch) {
    std::mt19937_64 random(rows);
    for (uint64_t& key : keys) key = random() % rows;
    for (uint64_t key : keys) partitions.push_back(PartitionOfKey(key));
  }
  size_t count() const { return keys.size() / kColdFileBatch; }
};

// This thread's CPU per row of `batch(b)` for b = 0, 1, ... while `go(rows done)` holds.
template <typename Batch, typename Go>
double NanosecondsPerRow(const Batch& batch, const Go& go) {
  const pid_t self = gettid();
  const double cpu_before = ThreadCpuSeconds(self);
  uint64_t done = 0;
  for (uint64_t b = 0; go(done); ++b, done += kColdFileBatch) batch(b);
  return done == 0 ? 0 : 1e9 * (ThreadCpuSeconds(self) - cpu_before) / static_cast<double>(done);
}

}  // namespace

Result<ColdFileFigures> MeasureColdFile(const std::string& directory, uint64_t rows,
                                        uint32_t floats_per_row, uint64_t file_bytes,
                                        double seconds) {
  if (rows == 0 || floats_per_row == 0) return InvalidArgument("the cold file needs rows");
  ASSIGN_OR_RETURN(std::unique_ptr<ColdRowFile> file,
                   ColdRowFile::Create(directory, floats_per_row, kPartitions,
                                       std::min(file_bytes, kMaxFileBytes)));
  for (int waited = 0; !file->ready() && waited < 6000; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  rows = std::min(rows, file->slots());
  const std::vector<float> row(floats_per_row, 0.5f);
  for (uint64_t key = 0; key < rows; ++key) file->Store(PartitionOfKey(key), key, row, false);
  const KeyBatches batches(rows, kBatches);
  std::vector<ColdRowFile::RowToStore> to_store(kColdFileBatch);
  const auto find = [&](uint64_t b) {
    const size_t at = b % batches.count() * kColdFileBatch;
    file->FindEach(
        std::span(batches.partitions).subspan(at, kColdFileBatch),
        std::span(batches.keys).subspan(at, kColdFileBatch), [](size_t, const float*, bool) {},
        [](size_t) {});
  };
  const auto store = [&](uint64_t b) {
    const size_t at = b % batches.count() * kColdFileBatch;
    for (uint32_t i = 0; i < kColdFileBatch; ++i) {
      to_store[i] = {batches.partitions[at + i], batches.keys[at + i], row.data()};
    }
    file->StoreEach(to_store, /*changed=*/false, nullptr);
  };
  const auto for_seconds = [&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    return [deadline](uint64_t) { return std::chrono::steady_clock::now() < deadline; };
  };
  ColdFileFigures figures;
  figures.find_ns = NanosecondsPerRow(find, for_seconds());
  figures.store_ns = NanosecondsPerRow(store, for_seconds());
  // Written back, every page is clean and write-protected: the stores that follow fault once a
  // page they reach.
  const int dir = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0 || ::syncfs(dir) != 0) {
    if (dir >= 0) ::close(dir);
    return Unavailable("cannot write back the file system of " + directory + ": " +
                       std::strerror(errno));
  }
  ::close(dir);
  const double pages = static_cast<double>(file->file_bytes()) / 4096;
  const auto stores = static_cast<uint64_t>(4 * pages);
  const double after_ns = NanosecondsPerRow(store, [&](uint64_t done) { return done < stores; });
  // The pages that many random keys (at most the keys drawn) reach, a bucket a page.
  const double keys = static_cast<double>(std::min<uint64_t>(stores, batches.keys.size()));
  const double touched = pages * (1 - std::exp(-keys / pages));
  figures.fault_us =
      std::max(0.0, (after_ns - figures.store_ns) * static_cast<double>(stores) / touched / 1e3);
  return figures;
}

}  // namespace ember::bench
