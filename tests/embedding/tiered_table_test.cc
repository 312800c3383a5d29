// Tests for a tiered EmbeddingTable (memory budget over RocksDB): it must hold exactly what an
// all-in-memory table holds after the same requests, across evictions and reopening.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "embedding/embedding_table.h"
#include "embedding/initializer.h"
#include "embedding/rocks_store.h"
#include "tests/test_util.h"

namespace ember::embedding {
namespace {

constexpr uint32_t kPartitions = 16;
constexpr uint64_t kVocabulary = 20000;

TableSpec Spec(OptimizerKind kind) {
  TableSpec spec;
  spec.name = "item";
  spec.dim = 8;
  spec.seed = 5;
  spec.optimizer.kind = kind;
  spec.optimizer.learning_rate = 0.05f;
  return spec;
}

// A table over a RocksStore in `path`, with a budget and, as a server gives it, a cold row file
// of four times the budget (or of cold_file_bytes; 0: none).
struct Tiered {
  // log_segment_bytes and log_kept_bytes_limit 0: the defaults.
  Tiered(const TableSpec& spec, const std::string& path, uint64_t budget_bytes,
         bool log_pushes = false, uint64_t log_segment_bytes = 0, uint64_t pin_budget_bytes = 0,
         uint64_t log_kept_bytes_limit = 0, std::optional<uint64_t> cold_file_bytes = std::nullopt)
      : budget(budget_bytes) {
    const uint32_t floats = EmbeddingTable::PersistedFloatsPerRow(spec);
    RocksStoreOptions options{path};
    options.log_pushes = log_pushes;
    if (log_segment_bytes != 0) options.log_segment_bytes = log_segment_bytes;
    if (log_kept_bytes_limit != 0) options.log_kept_bytes_limit = log_kept_bytes_limit;
    auto opened = RocksStore::Open(options, {{spec.name, floats}});
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    store = std::move(*opened);
    TierOptions tier{store->Table(spec.name), &budget};
    tier.pin_budget_bytes = pin_budget_bytes;
    tier.cold_file_dir = path;
    tier.cold_file_bytes = cold_file_bytes.value_or(4 * budget_bytes);
    auto created = EmbeddingTable::Create(spec, kPartitions, tier);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    table = std::move(*created);
  }
  MemoryBudget budget;
  std::unique_ptr<RocksStore> store;
  std::unique_ptr<EmbeddingTable> table;
};

// Bytes of a row in memory as the budget counts them.
uint32_t RowBytes(const EmbeddingTable& table) {
  return (table.dim() + table.state_floats() + 1) * sizeof(float);
}

// Every row with its state, by key.
std::map<uint64_t, std::vector<float>> Dump(const EmbeddingTable& table) {
  std::map<uint64_t, std::vector<float>> rows;
  Status visited = table.ForEachRow(
      [&](uint64_t key, std::span<const float> row, std::span<const float> state) {
        std::vector<float> all(row.begin(), row.end());
        all.insert(all.end(), state.begin(), state.end());
        EXPECT_TRUE(rows.emplace(key, std::move(all)).second) << "key " << key << " visited twice";
      });
  EXPECT_TRUE(visited.ok()) << visited.ToString();
  return rows;
}

// Zipf-like skewed batches with duplicates: rank = V * u^3.
std::vector<uint64_t> SkewedBatch(std::mt19937_64& rng, size_t size) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<uint64_t> keys(size);
  for (uint64_t& key : keys) {
    key = static_cast<uint64_t>(std::pow(uniform(rng), 3.0) * kVocabulary) * 2654435761u;
  }
  return keys;
}

// Request r of the traffic on `tiered` and `memory`: a pull of `keys` (checking that both
// return the same rows), then a push of the same gradients to both.
void SameRequest(EmbeddingTable& tiered, EmbeddingTable& memory,
                 const std::vector<uint64_t>& keys, int r) {
  const uint32_t dim = memory.dim();
  std::vector<float> got(keys.size() * dim), want(keys.size() * dim);
  ASSERT_TRUE(tiered.Pull(keys, got).ok());
  ASSERT_TRUE(memory.Pull(keys, want).ok());
  ASSERT_EQ(got, want) << "request " << r;
  std::vector<float> grads(keys.size() * dim);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = std::sin(0.37f * (i + r));
  ASSERT_TRUE(tiered.Push(keys, grads).ok());
  ASSERT_TRUE(memory.Push(keys, grads).ok());
}

// Runs the same pulls and pushes on `tiered` and `memory`, checking every pulled row.
void RunSameTraffic(EmbeddingTable& tiered, EmbeddingTable& memory, int requests) {
  std::mt19937_64 rng(11);
  for (int r = 0; r < requests && !::testing::Test::HasFatalFailure(); ++r) {
    SameRequest(tiered, memory, SkewedBatch(rng, 512), r);
  }
}

// The cold row file beside RocksDB: none (every miss reads RocksDB), one far smaller than the
// cold rows (its buckets replace rows all the time), the server's default (four times the budget:
// here a good part of the cold rows), or one that holds them all.
enum class ColdFile { kNone, kSmall, kDefault, kAmple };

class TieredTableEquivalenceTest
    : public ::testing::TestWithParam<std::tuple<OptimizerKind, ColdFile>> {};

TEST_P(TieredTableEquivalenceTest, HoldsWhatAnInMemoryTableHoldsAtTenTimesTheBudget) {
  testing::TempDir dir;
  const auto [optimizer, cold_file] = GetParam();
  const TableSpec spec = Spec(optimizer);
  EmbeddingTable memory(spec, kPartitions);
  const uint32_t row_bytes = (memory.dim() + memory.state_floats() + 1) * sizeof(float);
  // The traffic touches about 15000 distinct keys; a tenth of them fit.
  const uint64_t budget = 1500 * row_bytes;
  const std::optional<uint64_t> cold_file_bytes =
      cold_file == ColdFile::kNone    ? std::optional<uint64_t>(0)
      : cold_file == ColdFile::kSmall ? std::optional<uint64_t>(budget / 8)
      : cold_file == ColdFile::kAmple ? std::optional<uint64_t>(32 * budget)
                                      : std::nullopt;
  Tiered tiered(spec, dir.path(), budget, false, 0, 0, 0, cold_file_bytes);
  RunSameTraffic(*tiered.table, memory, 200);

  const TierStats stats = tiered.table->tier_stats();
  EXPECT_GT(memory.rows(), 10 * (budget / row_bytes));
  EXPECT_GT(stats.evictions, 0u);
  EXPECT_GT(stats.loaded, 0u);
  if (cold_file == ColdFile::kNone) EXPECT_EQ(stats.cold_file_hits + stats.kept_changed, 0u);
  // Rows changed and evicted wait in the file, unless it has no room (a small one, mostly).
  if (cold_file == ColdFile::kAmple) EXPECT_GT(stats.kept_changed, stats.writebacks);
  // Every row on disk went there through memory, so a file that can hold them all holds nearly
  // every row loaded (a full bucket aside).
  if (cold_file == ColdFile::kAmple) EXPECT_GT(stats.cold_file_hits, stats.loaded * 95 / 100);
  if (cold_file == ColdFile::kDefault) EXPECT_GT(stats.cold_file_hits, stats.loaded / 4);
  if (cold_file == ColdFile::kSmall) EXPECT_GT(stats.cold_file_hits, 0u);
  EXPECT_GT(stats.hits, stats.misses);  // skewed traffic: the hot rows stay
  EXPECT_LE(tiered.budget.used(), budget + 2 * 512 * row_bytes);
  EXPECT_EQ(tiered.table->rows(), memory.rows());
  EXPECT_EQ(Dump(*tiered.table), Dump(memory));

  // Flushed and reopened, the disk alone holds the same rows; the report counts each row written
  // back with its state.
  ASSERT_TRUE(tiered.table->FlushDirtyRows().ok());
  TableStats report;
  tiered.table->ReportStats(report);
  const uint64_t persisted_row_bytes = (memory.dim() + memory.state_floats()) * sizeof(float);
  EXPECT_GT(tiered.table->tier_stats().writebacks, 0u);
  EXPECT_EQ(report.writeback_bytes, tiered.table->tier_stats().writebacks * persisted_row_bytes);
  EXPECT_EQ(report.evictions, stats.evictions);
  tiered.table.reset();
  tiered.store.reset();
  Tiered reopened(spec, dir.path(), budget, false, 0, 0, 0, cold_file_bytes);
  EXPECT_EQ(reopened.table->rows(), memory.rows());
  EXPECT_EQ(reopened.table->tier_stats().resident_rows, 0u);
  EXPECT_EQ(Dump(*reopened.table), Dump(memory));
}

INSTANTIATE_TEST_SUITE_P(
    OptimizersAndColdFiles, TieredTableEquivalenceTest,
    ::testing::Combine(::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdagrad,
                                         OptimizerKind::kAdam, OptimizerKind::kFtrl),
                       ::testing::Values(ColdFile::kNone, ColdFile::kSmall, ColdFile::kDefault,
                                         ColdFile::kAmple)));

TEST(TieredTableTest, LoggedPushesAreOnDiskWhenPushReturns) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kAdagrad);
  EmbeddingTable memory(spec, kPartitions);
  {
    // No budget: every row stays in memory, so only the log puts pushes on disk.
    Tiered tiered(spec, dir.path(), 0, /*log_pushes=*/true);
    RunSameTraffic(*tiered.table, memory, 20);
    EXPECT_EQ(tiered.table->tier_stats().evictions, 0u);
  }  // no flush
  Tiered reopened(spec, dir.path(), 0);
  // Rows only pulled were never logged; every pushed row was, and pushes touch every pulled key.
  EXPECT_EQ(Dump(*reopened.table), Dump(memory));
}

// Small log segments retire many times while rows are evicted, written back and loaded again;
// killed without a flush (the table and store just go), the replay restores every push.
TEST(TieredTableTest, LoggedPushesSurviveAKillAcrossRetiredLogSegments) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kAdam);
  EmbeddingTable memory(spec, kPartitions);
  const uint32_t row_bytes = (memory.dim() + memory.state_floats() + 1) * sizeof(float);
  {
    Tiered tiered(spec, dir.path(), 1500 * row_bytes, /*log_pushes=*/true,
                  /*log_segment_bytes=*/64 << 10);
    RunSameTraffic(*tiered.table, memory, 120);
    EXPECT_GT(tiered.table->tier_stats().evictions, 0u);
    // Changed rows were evicted into the cold row file, so retiring relogged some from there.
    EXPECT_GT(tiered.table->tier_stats().kept_changed, 0u);
    // Retiring runs beside the pushes: wait (bounded) until it has dropped a segment.
    for (int i = 0; i < 500 && tiered.store->push_log()->stats().segments_retired == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const PushLog::Stats stats = tiered.store->push_log()->stats();
    EXPECT_GT(stats.segments_retired, 0u);
    EXPECT_GT(stats.relogged_bytes, 0u);
    EXPECT_LE(stats.writes, stats.records);
  }  // no flush
  Tiered reopened(spec, dir.path(), 0);
  EXPECT_EQ(reopened.table->rows(), memory.rows());
  EXPECT_EQ(reopened.table->rows(), *reopened.store->Table(spec.name)->CountRows());
  EXPECT_EQ(Dump(*reopened.table), Dump(memory));
}

// Threads pulling and pushing at once, each request over many stripes, evict into each other's
// stripes (a request makes room over all the stripes it touched, locked together). Each thread
// owns its keys, so an in-memory table given each thread's requests in order ends the same; a
// kill after the last push loses nothing, and the budget holds after every request.
TEST(TieredTableTest, ConcurrentRequestsEvictingAcrossStripesLoseNoPush) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kAdagrad);
  EmbeddingTable memory(spec, kPartitions);
  const uint32_t row_bytes = RowBytes(memory);
  constexpr int kThreads = 4;
  constexpr int kRequests = 60;
  constexpr size_t kBatch = 256;
  const uint64_t budget = 800 * row_bytes;
  // Thread t's batches: skewed keys of its own (key % kThreads == t).
  std::vector<std::vector<std::vector<uint64_t>>> batches(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    std::mt19937_64 rng(100 + t);
    for (int r = 0; r < kRequests; ++r) {
      std::vector<uint64_t> keys = SkewedBatch(rng, kBatch);
      for (uint64_t& key : keys) key = key - key % kThreads + t;
      batches[t].push_back(std::move(keys));
    }
  }
  const auto gradients = [&](size_t keys, int r) {
    std::vector<float> grads(keys * memory.dim());
    for (size_t i = 0; i < grads.size(); ++i) grads[i] = std::cos(0.11f * (i + r));
    return grads;
  };
  {
    Tiered tiered(spec, dir.path(), budget, /*log_pushes=*/true);
    std::atomic<int> failures{0};
    std::atomic<uint64_t> over_budget{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::vector<float> rows(kBatch * memory.dim());
        for (int r = 0; r < kRequests && failures.load() == 0; ++r) {
          const std::vector<uint64_t>& keys = batches[t][r];
          if (!tiered.table->Pull(keys, rows).ok()) ++failures;
          if (!tiered.table->Push(keys, gradients(keys.size(), r)).ok()) ++failures;
          // Other threads' requests may be between inserting and evicting: one batch each.
          if (tiered.budget.used() > budget + kThreads * 2 * kBatch * row_bytes) ++over_budget;
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    ASSERT_EQ(failures.load(), 0);
    EXPECT_EQ(over_budget.load(), 0u);
    EXPECT_GT(tiered.table->tier_stats().evictions, 0u);
    EXPECT_GT(tiered.table->tier_stats().writebacks, 0u);
    for (int t = 0; t < kThreads; ++t) {
      std::vector<float> rows(kBatch * memory.dim());
      for (int r = 0; r < kRequests; ++r) {
        ASSERT_TRUE(memory.Pull(batches[t][r], rows).ok());
        ASSERT_TRUE(memory.Push(batches[t][r], gradients(batches[t][r].size(), r)).ok());
      }
    }
    EXPECT_EQ(tiered.table->rows(), memory.rows());
    EXPECT_EQ(Dump(*tiered.table), Dump(memory));
  }  // no flush: a kill
  Tiered reopened(spec, dir.path(), 0);
  EXPECT_EQ(Dump(*reopened.table), Dump(memory));
}

// Retiring a full segment relogs only the changed rows whose last record is in it: rows pushed
// again since the next segment began are logged there already. A kill then loses nothing.
TEST(TieredTableTest, RetiringRelogsOnlyTheChangedRowsNotPushedSinceTheSegmentFilled) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kAdagrad);
  EmbeddingTable memory(spec, kPartitions);
  std::vector<uint64_t> cold(100), hot(100);
  std::iota(cold.begin(), cold.end(), 1000000);
  std::iota(hot.begin(), hot.end(), 1);
  {
    Tiered tiered(spec, dir.path(), 0, /*log_pushes=*/true, /*log_segment_bytes=*/64 << 10);
    const PushLog& log = *tiered.store->push_log();
    SameRequest(*tiered.table, memory, cold, 0);
    // A logged row: an op byte, table, partition, key, length, then weights and state.
    const uint64_t row_bytes = 1 + 4 + 4 + 8 + 4 + (memory.dim() + memory.state_floats()) * 4;
    // Hot pushes fill the first segment, then half the next (not all of it), which retires the
    // first.
    int r = 1;
    for (; r < 2000 && log.active_segment() == 1; ++r) {
      SameRequest(*tiered.table, memory, hot, r);
      ASSERT_FALSE(HasFatalFailure());
    }
    const uint64_t half = (uint64_t{64} << 10) / 2;
    for (uint64_t pushed = 0; pushed < half; pushed += hot.size() * row_bytes, ++r) {
      SameRequest(*tiered.table, memory, hot, r);
      ASSERT_FALSE(HasFatalFailure());
    }
    ASSERT_EQ(log.active_segment(), 2u);
    for (int i = 0; i < 500 && log.stats().segments_retired == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_EQ(log.stats().segments_retired, 1u);
    const uint64_t relogged = log.stats().relogged_bytes;
    EXPECT_GE(relogged, cold.size() * row_bytes);
    EXPECT_LT(relogged, cold.size() * row_bytes + kPartitions * 64) << "hot rows were relogged";
  }  // no flush
  Tiered reopened(spec, dir.path(), 0);
  EXPECT_EQ(Dump(*reopened.table), Dump(memory));
}

// A table opened and closed on the store before (one that only shaped a bulk load, never pushed)
// leaves the next table's log segments retired as they fill.
TEST(TieredTableTest, ATableClosedWithoutChangedRowsLeavesSegmentsRetiring) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kAdagrad);
  EmbeddingTable memory(spec, kPartitions);
  Tiered tiered(spec, dir.path(), 0, /*log_pushes=*/true, /*log_segment_bytes=*/64 << 10);
  {
    TierOptions tier{tiered.store->Table(spec.name), nullptr};
    auto shape = EmbeddingTable::Create(spec, kPartitions, tier);
    ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  }
  RunSameTraffic(*tiered.table, memory, 60);
  for (int i = 0; i < 500 && tiered.store->push_log()->stats().segments_retired == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(tiered.store->push_log()->stats().segments_retired, 0u);
}

// The row counts a table keeps with its rows equal a full count after a kill, with and without
// the push log (param), across evictions, erasures, restores and log segments retired (their
// count records kept in memory for retiring, or read back from the segment): opening does not
// count rows.
enum class CountLog { kNone, kRecordsKept, kRecordsReadBack };
class DurableCountTest : public ::testing::TestWithParam<CountLog> {};

TEST_P(DurableCountTest, CountsKeptWithTheRowsEqualAFullCountAfterAKill) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kAdagrad);
  EmbeddingTable memory(spec, kPartitions);
  const bool log = GetParam() != CountLog::kNone;
  const uint64_t kept_limit = GetParam() == CountLog::kRecordsReadBack ? 1 : 0;
  for (int life = 0; life < 3; ++life) {
    {
      Tiered tiered(spec, dir.path(), 800 * RowBytes(memory), log, 32 << 10, 0, kept_limit);
      if (life > 0) {
        EXPECT_EQ(tiered.table->rows(), *tiered.store->Table(spec.name)->CountRows())
            << "life " << life;
      }
      // Restored rows are durable once flushed (or evicted); pushes with the log at once.
      const std::vector<float> row(spec.dim, 0.5f), state(memory.state_floats(), 0.25f);
      for (uint64_t key = 0; key < 300; key += 3) {
        ASSERT_TRUE(tiered.table->Restore(key * 7919, row, state).ok());
        ASSERT_TRUE(memory.Restore(key * 7919, row, state).ok());
      }
      ASSERT_TRUE(tiered.table->FlushDirtyRows().ok());
      RunSameTraffic(*tiered.table, memory, 40);
      ASSERT_TRUE(tiered.table->Erase(life + 1).ok());
      ASSERT_TRUE(memory.Erase(life + 1).ok());
      if (!log) ASSERT_TRUE(tiered.table->FlushDirtyRows().ok());  // all a kill keeps then
    }  // killed: no flush
    Tiered reopened(spec, dir.path(), 0);
    const uint64_t counted = *reopened.store->Table(spec.name)->CountRows();
    EXPECT_EQ(reopened.table->rows(), counted) << "life " << life;
    EXPECT_EQ(counted, memory.rows()) << "life " << life;
  }
}

INSTANTIATE_TEST_SUITE_P(PushLog, DurableCountTest,
                         ::testing::Values(CountLog::kNone, CountLog::kRecordsKept,
                                           CountLog::kRecordsReadBack));

// An erased partition stays erased when the log that logged its rows is replayed, and rows
// pushed into it again after the erasure come back with their new values: the replay folds each
// row's writes into its last one, keeping their order around the erasure.
TEST(TieredTableTest, AReplayedLogDoesNotBringBackAnErasedPartition) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kSgd);
  EmbeddingTable memory(spec, kPartitions);
  {
    Tiered tiered(spec, dir.path(), 0, /*log_pushes=*/true);
    std::mt19937_64 rng(5);
    for (int round = 0; round < 3; ++round) {
      for (int r = 0; r < 10; ++r) {
        SameRequest(*tiered.table, memory, SkewedBatch(rng, 512), round * 10 + r);
        ASSERT_FALSE(HasFatalFailure());
      }
      for (uint32_t p = round; p < kPartitions; p += 3) {
        ASSERT_TRUE(tiered.table->Erase(p).ok());
        ASSERT_TRUE(memory.Erase(p).ok());
      }
    }
    // The last round's erasures leave rows of the earlier ones' partitions pushed again.
    ASSERT_GT(memory.rows(), 0u);
  }  // no flush
  Tiered reopened(spec, dir.path(), 0);
  EXPECT_EQ(reopened.table->rows(), memory.rows());
  EXPECT_EQ(Dump(*reopened.table), Dump(memory));
}

TEST(TieredTableTest, EraseAndRestoreCountRowsInMemoryAndOnDisk) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kSgd);
  EmbeddingTable memory(spec, kPartitions);
  Tiered tiered(spec, dir.path(), 200 * (spec.dim + 1) * sizeof(float));
  RunSameTraffic(*tiered.table, memory, 20);
  for (uint32_t p = 0; p < kPartitions; p += 3) {
    auto erased = tiered.table->Erase(p);
    ASSERT_TRUE(erased.ok()) << erased.status().ToString();
    EXPECT_EQ(*erased, *memory.Erase(p)) << "partition " << p;
  }
  EXPECT_EQ(tiered.table->rows(), memory.rows());
  // The erased rows that were evicted (into the cold row file too) do not come back: pulled
  // again, they are new rows, as in memory.
  ASSERT_GT(tiered.table->tier_stats().evictions, 0u);
  RunSameTraffic(*tiered.table, memory, 20);
  EXPECT_GT(tiered.table->tier_stats().cold_file_hits, 0u);
  const std::vector<float> row(spec.dim, 0.25f);
  for (uint64_t key = 0; key < 1000; key += 7) {
    ASSERT_TRUE(tiered.table->Restore(key, row, {}).ok());
    ASSERT_TRUE(memory.Restore(key, row, {}).ok());
  }
  EXPECT_EQ(tiered.table->rows(), memory.rows());
  EXPECT_EQ(Dump(*tiered.table), Dump(memory));
}

TEST(TieredTableTest, RowsOfTheWrongWidthOnDiskAreReported) {
  testing::TempDir dir;
  {
    auto store = RocksStore::Open({dir.path()}, {{"item", 3}});
    ASSERT_TRUE(store.ok());
    RowWrites writes(*(*store)->Table("item"));
    const std::vector<float> row(3, 1.0f);
    writes.Put(0, 42, row);
    ASSERT_TRUE((*store)->Table("item")->Write(writes).ok());
  }
  auto store = RocksStore::Open({dir.path()}, {{"item", 8}});
  ASSERT_TRUE(store.ok());
  const uint64_t keys[] = {42};
  const uint32_t partitions[] = {0};
  Status read = (*store)->Table("item")->MultiGet(partitions, keys,
                                                  [](size_t, std::span<const float>) {});
  EXPECT_EQ(read.code(), StatusCode::kDataLoss) << read.ToString();
}

// The records of `store` under `prefix`.
std::map<std::string, std::string> Records(const RocksStore& store, std::string_view prefix) {
  std::map<std::string, std::string> records;
  Status read = store.ForEachRecord(
      prefix, [&](std::string_view key, std::string_view value) { records.emplace(key, value); });
  EXPECT_TRUE(read.ok()) << read.ToString();
  return records;
}

// Records a caller adds to a logged push reach disk in the same write as its rows; a table that
// does not log its pushes never calls the hook.
TEST(TieredTableTest, RecordsAddedToALoggedPushAreWrittenWithItsRows) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kSgd);
  const std::vector<uint64_t> keys = {3, 4};
  const std::vector<float> grads(keys.size() * spec.dim, 1.0f);
  std::map<uint64_t, std::vector<float>> pushed;
  {
    Tiered logged(spec, dir.path(), 0, /*log_pushes=*/true);
    ASSERT_TRUE(logged.table->logs_pushes());
    int calls = 0;
    ASSERT_TRUE(logged.table
                    ->Push(keys, grads,
                           [&](RowWrites& batch) {
                             ++calls;
                             batch.PutRecord("test/a", "one");
                             batch.PutRecord("test/b", "two");
                           })
                    .ok());
    EXPECT_EQ(calls, 1);
    pushed = Dump(*logged.table);
    // No flush: the rows and the records are only in the write-ahead log.
  }
  Tiered reopened(spec, dir.path(), 0, /*log_pushes=*/false);
  EXPECT_EQ(Dump(*reopened.table), pushed);
  EXPECT_EQ(Records(*reopened.store, "test/"),
            (std::map<std::string, std::string>{{"test/a", "one"}, {"test/b", "two"}}));

  EXPECT_FALSE(reopened.table->logs_pushes());
  bool called = false;
  ASSERT_TRUE(reopened.table->Push(keys, grads, [&](RowWrites&) { called = true; }).ok());
  EXPECT_FALSE(called);

  // A batch of records only: the deletion of one.
  RowWrites deletion(*reopened.store);
  deletion.DeleteRecord("test/a");
  ASSERT_TRUE(reopened.store->Write(deletion).ok());
  EXPECT_TRUE(deletion.empty());
  EXPECT_EQ(Records(*reopened.store, "test/"),
            (std::map<std::string, std::string>{{"test/b", "two"}}));
}

// A push's check adds its records to the write of the push's rows once, and only when it let
// the push be applied.
TEST(TieredTableTest, APushChecksRecordsAreWrittenOnlyWhenItLetsThePushApply) {
  using Verdict = EmbeddingTable::PushCheck::Verdict;
  // Answers `answer` and adds the record "test/<name>".
  struct RecordingCheck final : EmbeddingTable::PushCheck {
    RecordingCheck(Result<Verdict> answer, std::string name)
        : answer(std::move(answer)), name(std::move(name)) {}
    Result<Verdict> Check(std::span<const uint64_t>, std::span<const uint32_t>) override {
      return answer;
    }
    void AppendWrites(RowWrites& batch) override {
      ++appends;
      batch.PutRecord("test/" + name, "");
    }
    Result<Verdict> answer;
    std::string name;
    int appends = 0;
  };
  testing::TempDir dir;
  Tiered logged(Spec(OptimizerKind::kAdagrad), dir.path(), 0, /*log_pushes=*/true);
  const std::vector<uint64_t> keys = {3, 4, 3};
  const std::vector<float> grads(keys.size() * logged.table->dim(), 0.5f);
  RecordingCheck skip(Verdict::kSkip, "skipped");
  RecordingCheck refuse(Unavailable("later"), "refused");
  RecordingCheck apply(Verdict::kApply, "applied");
  ASSERT_TRUE(logged.table->Push(keys, grads, skip).ok());
  EXPECT_EQ(logged.table->Push(keys, grads, refuse).code(), StatusCode::kUnavailable);
  EXPECT_EQ(logged.table->rows(), 0u);
  ASSERT_TRUE(logged.table->Push(keys, grads, apply).ok());
  EXPECT_EQ(logged.table->rows(), 2u);
  EXPECT_EQ(skip.appends + refuse.appends, 0);
  EXPECT_EQ(apply.appends, 1);
  // The records are in the push log until it retires them or a reopening replays it.
  logged.table.reset();
  logged.store.reset();
  Tiered reopened(Spec(OptimizerKind::kAdagrad), dir.path(), 0);
  EXPECT_EQ(Records(*reopened.store, "test/"),
            (std::map<std::string, std::string>{{"test/applied", ""}}));
}

// Admission works the same with and without the tier: param true = tiered.
class AdmissionTest : public ::testing::TestWithParam<bool> {};

TEST_P(AdmissionTest, AKeyIsStoredOnlyFromItsAdmitAfterOccurrence) {
  testing::TempDir dir;
  TableSpec spec = Spec(OptimizerKind::kAdagrad);
  EmbeddingTable reference(spec, kPartitions);  // stores every key
  spec.admit_after = 3;
  std::unique_ptr<Tiered> tiered;
  std::unique_ptr<EmbeddingTable> memory;
  if (GetParam()) {
    tiered = std::make_unique<Tiered>(spec, dir.path(), 1000 * 40, /*log_pushes=*/true);
  } else {
    memory = std::make_unique<EmbeddingTable>(spec, kPartitions);
  }
  EmbeddingTable& table = GetParam() ? *tiered->table : *memory;
  const std::vector<uint64_t> keys = {7, 8};
  std::vector<float> initial(2 * spec.dim), got(2 * spec.dim);
  ASSERT_TRUE(reference.Pull(keys, initial).ok());
  const std::vector<float> grads(2 * spec.dim, 0.5f);

  ASSERT_TRUE(table.Pull(keys, got).ok());  // occurrence 1: initial row, not stored
  EXPECT_EQ(got, initial);
  ASSERT_TRUE(table.Push(keys, grads).ok());  // occurrence 2: update dropped
  EXPECT_EQ(table.rows(), 0u);
  EXPECT_EQ(table.updates_dropped(), 2u);
  ASSERT_TRUE(table.Pull(keys, got).ok());  // occurrence 3: admitted, still the initial row
  EXPECT_EQ(got, initial);
  EXPECT_EQ(table.rows(), 2u);
  EXPECT_EQ(table.keys_not_admitted(), 4u);
  ASSERT_TRUE(table.Push(keys, grads).ok());  // stored from now on
  ASSERT_TRUE(reference.Push(keys, grads).ok());
  ASSERT_TRUE(table.Pull(keys, got).ok());
  ASSERT_TRUE(reference.Pull(keys, initial).ok());
  EXPECT_EQ(got, initial);
  EXPECT_EQ(table.updates_dropped(), 2u);
  EXPECT_EQ(Dump(table), Dump(reference));
}

INSTANTIATE_TEST_SUITE_P(InMemoryAndTiered, AdmissionTest, ::testing::Bool());

// Expiry works the same with and without the tier: param true = tiered.
class ExpiryTest : public ::testing::TestWithParam<bool> {};

TEST_P(ExpiryTest, RowsNotUpdatedForTheTtlAreDeletedInMemoryAndOnDisk) {
  testing::TempDir dir;
  TableSpec spec = Spec(OptimizerKind::kSgd);
  spec.ttl_seconds = 100;
  uint32_t now = 1'000'000;
  // A budget of 50 rows: most of the 600 below live on disk only.
  const uint64_t budget = 50 * (spec.dim + 2) * sizeof(float);
  std::unique_ptr<Tiered> tiered;
  std::unique_ptr<EmbeddingTable> memory;
  if (GetParam()) {
    tiered = std::make_unique<Tiered>(spec, dir.path(), budget);
  } else {
    memory = std::make_unique<EmbeddingTable>(spec, kPartitions);
  }
  EmbeddingTable& table = GetParam() ? *tiered->table : *memory;
  table.SetClockForTesting([&] { return now; });
  // Old keys are updated once; renewed keys again later, when their rows are on disk: evicted
  // changed, they wait in the cold row file, newer than RocksDB's versions.
  std::vector<uint64_t> old_keys, new_keys, renewed_keys;
  for (uint64_t k = 0; k < 200; ++k) old_keys.push_back(k);
  for (uint64_t k = 200; k < 400; ++k) new_keys.push_back(k);
  for (uint64_t k = 400; k < 600; ++k) renewed_keys.push_back(k);
  const std::vector<float> grads(200 * spec.dim, 1.0f);
  ASSERT_TRUE(table.Push(old_keys, grads).ok());
  ASSERT_TRUE(table.Push(renewed_keys, grads).ok());
  now += 60;
  ASSERT_TRUE(table.Push(new_keys, grads).ok());
  ASSERT_TRUE(table.Push(renewed_keys, grads).ok());
  ASSERT_TRUE(table.Push(new_keys, grads).ok());  // the renewed rows leave memory
  if (GetParam()) EXPECT_GT(table.tier_stats().kept_changed, 0u);
  std::vector<float> rows(200 * spec.dim);
  ASSERT_TRUE(table.Pull(old_keys, rows).ok());  // a pull is not an update
  EXPECT_EQ(*table.ExpireRows(), 0u);
  now += 50;  // old keys: 110 s since their update; new and renewed keys: 50 s
  auto expired = table.ExpireRows();
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  EXPECT_EQ(*expired, 200u);
  EXPECT_EQ(table.rows_expired(), 200u);
  EXPECT_EQ(table.rows(), 400u);
  std::map<uint64_t, std::vector<float>> rows_left = Dump(table);
  ASSERT_EQ(rows_left.size(), 400u);
  EXPECT_EQ(rows_left.begin()->first, 200u);
  // A renewed key holds both updates.
  std::vector<float> renewed(spec.dim), initial(spec.dim);
  ASSERT_TRUE(table.Pull(std::vector<uint64_t>{450}, renewed).ok());
  InitializeRow(spec, 450, initial);
  EXPECT_EQ(rows_left.at(450).front(), renewed.front());
  EXPECT_NEAR(renewed.front(), initial.front() - 2 * spec.optimizer.learning_rate, 1e-6);
  // An expired key starts again from its initial row.
  std::vector<float> again(spec.dim);
  ASSERT_TRUE(table.Pull(std::vector<uint64_t>{5}, again).ok());
  InitializeRow(spec, 5, initial);
  EXPECT_EQ(again, initial);
}

INSTANTIATE_TEST_SUITE_P(InMemoryAndTiered, ExpiryTest, ::testing::Bool());

// ---- Look-ahead ----

std::chrono::steady_clock::time_point InOneMinute() {
  return std::chrono::steady_clock::now() + std::chrono::minutes(1);
}

// The traffic of RunSameTraffic with the keys of request r + lookahead hinted before request r
// (by a thread of its own when `concurrent`, as a server's prefetching would run beside the
// requests) and released after its push; every pulled row and the final rows must equal those
// of an in-memory table. Returns the rows the requests themselves read from disk.
uint64_t RunWithLookahead(EmbeddingTable& tiered, EmbeddingTable& memory, int requests,
                          int lookahead, bool concurrent) {
  std::mt19937_64 rng(11);
  std::vector<std::vector<uint64_t>> batches;
  for (int r = 0; r < requests; ++r) batches.push_back(SkewedBatch(rng, 512));
  std::atomic<int> hinted{-1};  // the last request hinted
  std::atomic<bool> failed{false};
  auto hint = [&](int r) {
    if (!tiered.Prefetch(r, batches[r], InOneMinute()).ok()) failed = true;
    hinted = r;
  };
  std::thread prefetcher;
  if (lookahead > 0 && concurrent) {
    prefetcher = std::thread([&] {
      for (int r = 0; r < requests; ++r) hint(r);
    });
  }
  for (int r = 0; r < requests && !::testing::Test::HasFailure(); ++r) {
    if (lookahead > 0 && !concurrent) {
      for (int ahead = hinted + 1; ahead <= std::min(requests - 1, r + lookahead); ++ahead) {
        hint(ahead);
      }
    }
    SameRequest(tiered, memory, batches[r], r);
    tiered.ReleaseHint(r);
  }
  if (prefetcher.joinable()) prefetcher.join();
  for (int r = 0; r < requests; ++r) tiered.ReleaseHint(r);
  EXPECT_FALSE(failed.load());
  EXPECT_EQ(Dump(tiered), Dump(memory));
  return tiered.tier_stats().loaded;
}

class LookaheadTest : public ::testing::TestWithParam<bool> {};  // param: hints from a thread

TEST_P(LookaheadTest, HintedRowsAreInMemoryWhenNeededAndNoValueChanges) {
  const TableSpec spec = Spec(OptimizerKind::kAdagrad);
  uint64_t loaded[2];
  for (int lookahead : {0, 2}) {
    testing::TempDir dir;
    EmbeddingTable memory(spec, kPartitions);
    const uint64_t budget = 3000 * RowBytes(memory);
    {
      // Filled and flushed first, so that rows are on disk to prefetch.
      Tiered filling(spec, dir.path(), budget);
      RunSameTraffic(*filling.table, memory, 60);
      ASSERT_TRUE(filling.table->FlushDirtyRows().ok());
    }
    Tiered tiered(spec, dir.path(), budget, /*log_pushes=*/true, 0, budget / 2);
    loaded[lookahead > 0] = RunWithLookahead(*tiered.table, memory, 120, lookahead, GetParam());
    const PrefetchStats stats = tiered.table->prefetch_stats();
    EXPECT_EQ(stats.pinned_rows, 0u);
    EXPECT_EQ(stats.pinned_bytes, 0u);
    EXPECT_EQ(stats.hints, 0u);
    // Hints from a thread of their own may all come after their requests (scheduling decides).
    if (lookahead > 0 && !GetParam()) EXPECT_GT(stats.prefetched_rows, 0u);
  }
  // Sequential hints two requests ahead leave the requests few rows to read from disk (hints
  // from a thread of their own race the requests: how far ahead they get depends on scheduling).
  if (!GetParam()) {
    EXPECT_LT(loaded[1], loaded[0] / 4)
        << "rows read by requests without look-ahead " << loaded[0] << ", with " << loaded[1];
  }
}

INSTANTIATE_TEST_SUITE_P(Hints, LookaheadTest, ::testing::Values(false, true));

// Rows changed in the cold row file (newer than RocksDB) and prefetched stay changed in memory:
// evicted unpushed, they are not taken for RocksDB's versions, and a flush writes them.
TEST(LookaheadTest, PrefetchedRowsChangedInTheColdRowFileStayChanged) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kAdagrad);
  EmbeddingTable memory(spec, kPartitions);
  std::vector<uint64_t> renewed(200), others(400);
  std::iota(renewed.begin(), renewed.end(), 1);
  std::iota(others.begin(), others.end(), 1000);
  {
    Tiered tiered(spec, dir.path(), 100 * RowBytes(memory), false, 0, 100 * RowBytes(memory));
    // Pushed twice, with other rows between: the second push loads them from RocksDB, and the
    // other rows' push evicts them changed into the file.
    for (int round = 0; round < 2; ++round) {
      SameRequest(*tiered.table, memory, renewed, round);
      SameRequest(*tiered.table, memory, others, round);
    }
    ASSERT_GT(tiered.table->tier_stats().kept_changed, 0u);
    const std::vector<uint64_t> hinted(renewed.begin(), renewed.begin() + 50);
    ASSERT_TRUE(tiered.table->Prefetch(1, hinted, InOneMinute()).ok());
    EXPECT_GT(tiered.table->prefetch_stats().prefetched_rows, 0u);
    tiered.table->ReleaseHint(1);
    std::vector<float> rows(others.size() * spec.dim);
    ASSERT_TRUE(tiered.table->Pull(others, rows).ok());  // evicts the prefetched rows unpushed
    ASSERT_TRUE(tiered.table->FlushDirtyRows().ok());
  }
  Tiered reopened(spec, dir.path(), 0);
  EXPECT_EQ(Dump(*reopened.table), Dump(memory));
}

TEST(LookaheadTest, PinnedRowsSurviveEvictionPressureUntilReleased) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kSgd);
  EmbeddingTable shape(spec, kPartitions);
  const uint64_t row_bytes = RowBytes(shape);
  Tiered tiered(spec, dir.path(), 200 * row_bytes, false, 0, 100 * row_bytes);
  std::vector<uint64_t> hinted(50);
  for (size_t i = 0; i < hinted.size(); ++i) hinted[i] = 1'000'000 + i;
  std::vector<float> rows(hinted.size() * spec.dim);
  ASSERT_TRUE(tiered.table->Pull(hinted, rows).ok());  // created, in memory
  ASSERT_TRUE(tiered.table->Prefetch(7, hinted, InOneMinute()).ok());
  EXPECT_EQ(tiered.table->prefetch_stats().pinned_rows, hinted.size());
  auto pressure = [&](uint64_t first) {
    std::vector<uint64_t> other(2000);
    for (size_t i = 0; i < other.size(); ++i) other[i] = first + i;
    std::vector<float> out(other.size() * spec.dim);
    ASSERT_TRUE(tiered.table->Pull(other, out).ok());
  };
  auto misses_of_hinted = [&] {
    const uint64_t before = tiered.table->tier_stats().misses;
    EXPECT_TRUE(tiered.table->Pull(hinted, rows).ok());
    return tiered.table->tier_stats().misses - before;
  };
  pressure(0);
  EXPECT_GT(tiered.table->tier_stats().evictions, 1000u);
  EXPECT_EQ(misses_of_hinted(), 0u);
  tiered.table->ReleaseHint(7);
  EXPECT_EQ(tiered.table->prefetch_stats().pinned_rows, 0u);
  pressure(10'000);
  EXPECT_GT(misses_of_hinted(), 0u);
}

TEST(LookaheadTest, PinsStopAtTheirBudgetAndHintsAtTheirBound) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kSgd);
  EmbeddingTable shape(spec, kPartitions);
  Tiered tiered(spec, dir.path(), 0, false, 0, 10 * RowBytes(shape));
  std::vector<uint64_t> keys(30);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = i;
  std::vector<float> rows(keys.size() * spec.dim);
  ASSERT_TRUE(tiered.table->Pull(keys, rows).ok());
  auto unpinned = tiered.table->Prefetch(1, keys, InOneMinute());
  ASSERT_TRUE(unpinned.ok()) << unpinned.status().ToString();
  EXPECT_EQ(*unpinned, 20u);
  PrefetchStats stats = tiered.table->prefetch_stats();
  EXPECT_EQ(stats.pinned_rows, 10u);
  EXPECT_EQ(stats.pins_refused, 20u);
  EXPECT_EQ(stats.pinned_bytes, 10 * RowBytes(shape));
  // An expired hint is released by the next one.
  ASSERT_TRUE(tiered.table->Prefetch(2, keys, std::chrono::steady_clock::now()).ok());
  ASSERT_TRUE(tiered.table->Prefetch(3, {}, InOneMinute()).ok());
  stats = tiered.table->prefetch_stats();
  EXPECT_EQ(stats.hints_expired, 1u);
  EXPECT_EQ(stats.hints, 2u);  // 1 and 3
  size_t held = stats.hints;
  Status refused;
  for (uint64_t hint = 100; refused.ok() && held < 10000; ++hint, ++held) {
    refused = tiered.table->Prefetch(hint, {}, InOneMinute()).status();
  }
  EXPECT_EQ(refused.code(), StatusCode::kResourceExhausted) << refused.ToString();
  EXPECT_GT(tiered.table->prefetch_stats().hints_refused, 0u);
}

// A partition erased (moved away) while its rows are pinned: the rows go, the pins' account
// follows, and releasing the hint later is harmless.
TEST(LookaheadTest, AHintForAnErasedPartitionIsDroppedSafely) {
  testing::TempDir dir;
  const TableSpec spec = Spec(OptimizerKind::kAdagrad);
  EmbeddingTable memory(spec, kPartitions);
  Tiered tiered(spec, dir.path(), 0, /*log_pushes=*/true, 0, 1 << 20);
  RunSameTraffic(*tiered.table, memory, 10);
  std::mt19937_64 rng(5);
  const std::vector<uint64_t> keys = SkewedBatch(rng, 512);
  ASSERT_TRUE(tiered.table->Prefetch(9, keys, InOneMinute()).ok());
  ASSERT_GT(tiered.table->prefetch_stats().pinned_rows, 0u);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    ASSERT_TRUE(tiered.table->Erase(p).ok());
    ASSERT_TRUE(memory.Erase(p).ok());
  }
  EXPECT_EQ(tiered.table->prefetch_stats().pinned_rows, 0u);
  EXPECT_EQ(tiered.table->prefetch_stats().pinned_bytes, 0u);
  tiered.table->ReleaseHint(9);
  EXPECT_EQ(tiered.table->prefetch_stats().pinned_rows, 0u);
  RunSameTraffic(*tiered.table, memory, 5);
  EXPECT_EQ(Dump(*tiered.table), Dump(memory));
}

// A new key's row is created ahead (pinned, as a pull would create it), unless the pin budget is
// full, or creating is an event of its own (admission counts requests, a TTL stamps the time).
TEST(LookaheadTest, NewKeysGetTheRowAPullWouldCreateOnlyWhenTheyCanBePinned) {
  const TableSpec spec = Spec(OptimizerKind::kAdagrad);
  EmbeddingTable shape(spec, kPartitions);
  std::vector<uint64_t> keys(40);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = 5'000'000 + i;
  {
    testing::TempDir dir;
    Tiered tiered(spec, dir.path(), 0, false, 0, 30 * RowBytes(shape));
    auto unpinned = tiered.table->Prefetch(1, keys, InOneMinute());
    ASSERT_TRUE(unpinned.ok()) << unpinned.status().ToString();
    EXPECT_EQ(*unpinned, 10u);
    EXPECT_EQ(tiered.table->prefetch_stats().created_rows, 30u);
    EXPECT_EQ(tiered.table->rows(), 30u);
    EXPECT_EQ(tiered.table->prefetch_stats().pinned_rows, 30u);
    EmbeddingTable memory(spec, kPartitions);
    std::vector<float> ahead(keys.size() * spec.dim), pulled(keys.size() * spec.dim);
    ASSERT_TRUE(tiered.table->Pull(keys, ahead).ok());
    ASSERT_TRUE(memory.Pull(keys, pulled).ok());
    EXPECT_EQ(ahead, pulled);
    EXPECT_EQ(tiered.table->rows(), keys.size());
  }
  for (bool admission : {true, false}) {
    TableSpec special = spec;
    if (admission) {
      special.admit_after = 2;
    } else {
      special.ttl_seconds = 60;
    }
    testing::TempDir dir;
    Tiered tiered(special, dir.path(), 0, false, 0, 1 << 20);
    ASSERT_TRUE(tiered.table->Prefetch(1, keys, InOneMinute()).ok());
    EXPECT_EQ(tiered.table->prefetch_stats().created_rows, 0u) << "admission " << admission;
    EXPECT_EQ(tiered.table->rows(), 0u);
  }
}

}  // namespace
}  // namespace ember::embedding
