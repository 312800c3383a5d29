// The tier benchmark: bulk load, phases, and the recovery measurement.
#include "bench/tier_bench.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "bench/tier_phase.h"
#include "bench/tier_requests.h"
#include "common/child_process.h"
#include "common/progress_meter.h"
#include "common/string_printf.h"
#include "embedding/embedding_table.h"
#include "embedding/initializer.h"
#include "embedding/rocks_store.h"
#include "embedding/table_config.h"
#include "trainer/zipf.h"

namespace ember::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Progress = std::function<void(const std::string&)>;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string PhaseLine(const char* what, const TierPhaseFigures& figures) {
  return StringPrintf("  %-22s %12.0f keys/s   p50 %8.3f ms   p99 %8.3f ms   CPU %7.0f ns/key",
                      what, figures.keys_per_second, figures.p50_ms, figures.p99_ms,
                      figures.cpu_ns_per_key);
}

const char* DurabilityName(ps::Durability durability) {
  switch (durability) {
    case ps::Durability::kAck:
      return "ack";
    case ps::Durability::kSync:
      return "sync";
    case ps::Durability::kFlush:
      return "flush";
  }
  return "?";
}

TableSpec BenchSpec(const TierBenchOptions& config) {
  TableSpec spec;
  spec.name = "bench";
  spec.dim = config.dim;
  spec.seed = 1;
  spec.optimizer.kind = *embedding::OptimizerKindFromName(config.optimizer);
  return spec;
}

uint32_t FloatsPerRow(const TableSpec& spec) {
  return embedding::EmbeddingTable::PersistedFloatsPerRow(spec);
}

Result<std::unique_ptr<embedding::RocksStore>> OpenStore(const TierBenchOptions& config) {
  const TableSpec spec = BenchSpec(config);
  embedding::RocksStoreOptions options{config.data_dir + "/rows"};
  options.log_pushes = config.durability != ps::Durability::kFlush;
  options.sync_log = config.durability == ps::Durability::kSync;
  return embedding::RocksStore::Open(options, {{spec.name, FloatsPerRow(spec)}});
}

// Writes every row's initial value straight to disk (a bulk load, as a restore would).
Status BulkLoad(const TierBenchOptions& config, embedding::RocksTable& disk,
                const embedding::EmbeddingTable& shape) {
  const TableSpec spec = BenchSpec(config);
  auto optimizer = embedding::RowOptimizer::Create(spec.optimizer, spec.dim);
  std::vector<float> row(FloatsPerRow(spec));
  embedding::RowWrites writes(disk);
  ProgressMeter meter({.label = "bulk-loading", .unit = "rows", .total = config.rows});
  for (uint64_t key = 0; key < config.rows; ++key) {
    embedding::InitializeRow(spec, key, std::span<float>(row.data(), spec.dim));
    optimizer->InitState(std::span<float>(row.data() + spec.dim, row.size() - spec.dim));
    writes.Put(shape.PartitionOf(key), key, row);
    if (writes.size() == 65536) {
      RETURN_IF_ERROR(disk.Write(writes));
      meter.Set(key + 1);
    }
  }
  return disk.Write(writes);
}

// Pulls the `count` most popular keys, most popular first, as a server that has run for a while
// holds them.
Status PullHottest(const TierBenchOptions& config, embedding::EmbeddingTable& table,
                   uint64_t count) {
  const trainer::ZipfSampler sampler(config.rows, config.exponent, true, kTierSamplerSalt);
  std::vector<uint64_t> keys;
  std::vector<float> rows;
  for (uint64_t first = 0; first < count; first += config.keys_per_request) {
    keys.clear();
    for (uint64_t rank = first; rank < std::min(count, first + config.keys_per_request); ++rank) {
      keys.push_back(sampler.KeyOfRank(rank) % config.rows);
    }
    rows.resize(keys.size() * config.dim);
    RETURN_IF_ERROR(table.Pull(keys, rows));
  }
  return Status::Ok();
}

// Bytes of the files under `path`, those of the push log apart.
struct DiskUse {
  uint64_t rows = 0;
  uint64_t push_log = 0;
};
DiskUse DirectoryBytes(const std::string& path) {
  DiskUse use;
  std::error_code error;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(path, error)) {
    if (!entry.is_regular_file(error)) continue;
    const bool log = entry.path().parent_path().filename() == "ember-pushlog";
    (log ? use.push_log : use.rows) += entry.file_size(error);
  }
  return use;
}

Result<std::unique_ptr<embedding::EmbeddingTable>> OpenTiered(const TierBenchOptions& config,
                                                              embedding::RocksStore& store,
                                                              embedding::MemoryBudget* budget) {
  embedding::TierOptions tier{store.Table("bench"), budget};
  // Hinted rows may take half the budget (a window of look-ahead is far smaller).
  if (budget != nullptr) tier.pin_budget_bytes = budget->limit() / 2;
  if (budget != nullptr) tier.cold_file_bytes = budget->limit() / 100 * config.cold_file_percent;
  tier.cold_file_dir = config.data_dir;
  return embedding::EmbeddingTable::Create(BenchSpec(config), 1024, tier);
}

uint64_t RowBytes(const TierBenchOptions& config) {
  return uint64_t{FloatsPerRow(BenchSpec(config)) + 1} * sizeof(float);  // with the flags word
}

uint64_t BudgetBytes(const TierBenchOptions& config) {
  return static_cast<uint64_t>(config.rows * config.budget_fraction) * RowBytes(config);
}

// The same table all in memory: created by pulling every row, then the two phases.
Status MeasureInMemory(const TierBenchOptions& config, const TierRequests& requests,
                       TierBenchReport* report, const Progress& progress) {
  embedding::EmbeddingTable memory(BenchSpec(config), 1024);
  TierReplay replay(requests, config.threads);
  const auto start = Clock::now();
  std::vector<uint64_t> keys;
  std::vector<float> rows;
  ProgressMeter meter({.label = "populating", .unit = "rows", .total = config.rows});
  for (uint64_t first = 0; first < config.rows; first += 65536) {
    keys.clear();
    for (uint64_t key = first; key < std::min(config.rows, first + 65536); ++key) {
      keys.push_back(key);
    }
    rows.resize(keys.size() * config.dim);
    RETURN_IF_ERROR(memory.Pull(keys, rows));
    meter.Add(keys.size());
  }
  meter.Finish();
  report->memory_populate_seconds = SecondsSince(start);
  report->memory_bytes = static_cast<double>(memory.bytes());
  progress(StringPrintf("in memory: populated in %.1f s, %.2f GB held",
                        report->memory_populate_seconds, report->memory_bytes / 1e9));
  ASSIGN_OR_RETURN(report->memory_pull,
                   RunTierPhase(config, memory, replay, TierPhase::kPull, config.seconds));
  ASSIGN_OR_RETURN(report->memory_push,
                   RunTierPhase(config, memory, replay, TierPhase::kPush, config.seconds));
  ASSIGN_OR_RETURN(report->memory_pair,
                   RunTierPhase(config, memory, replay, TierPhase::kPullThenPush, config.seconds));
  progress(PhaseLine("pull, in memory", report->memory_pull));
  progress(PhaseLine("push, in memory", report->memory_push));
  progress(PhaseLine("pull+push, in memory", report->memory_pair));
  return Status::Ok();
}

double TierRatio(double tiered, double memory) { return memory > 0 ? tiered / memory : 0; }

// Writes every row into the tiered table's store (no budget), and counts them.
Status BulkLoadTiered(const TierBenchOptions& config, embedding::RocksStore& store,
                      TierBenchReport* report, const Progress& progress) {
  ASSIGN_OR_RETURN(auto shape, OpenTiered(config, store, nullptr));
  const auto start = Clock::now();
  RETURN_IF_ERROR(BulkLoad(config, *store.Table("bench"), *shape));
  RETURN_IF_ERROR(shape->RecountRows());  // written past the table: it keeps their counts
  RETURN_IF_ERROR(store.Flush());
  report->bulk_load_seconds = SecondsSince(start);
  progress(StringPrintf("tiered: bulk-loaded in %.1f s; budget %.2f GB (%.0f%% of the rows)",
                        report->bulk_load_seconds, report->budget_bytes / 1e9,
                        100 * config.budget_fraction));
  return Status::Ok();
}

// Where a logged push's time went in the push phase: its group write, and its wait for it.
void ReportPushLog(const TierBenchOptions& config, const TierBenchReport& report,
                   const embedding::PushLog::Stats& log_before,
                   const embedding::PushLog::Stats& log_after, const Progress& progress) {
  const uint64_t writes = log_after.writes - log_before.writes;
  if (writes == 0) return;
  const uint64_t waits = log_after.waits - log_before.waits;
  const double wait_seconds = log_after.wait_seconds - log_before.wait_seconds;
  progress(StringPrintf(
      "  push log in the push phase: %llu group writes of %.2f MB, %.2f ms each; waits for it "
      "(the pushes', and relogging's) %.2f ms on average, %.0f%% of the request threads' time; "
      "%llu segments retired, relogging %.0f MB of rows (%.0f%% of the bytes written)",
      static_cast<unsigned long long>(writes), (log_after.bytes - log_before.bytes) / 1e6 / writes,
      1e3 * (log_after.write_seconds - log_before.write_seconds) / writes,
      waits > 0 ? 1e3 * wait_seconds / waits : 0.0,
      100 * wait_seconds / (config.threads * report.tiered_push.seconds),
      static_cast<unsigned long long>(log_after.segments_retired - log_before.segments_retired),
      (log_after.relogged_bytes - log_before.relogged_bytes) / 1e6,
      100.0 * (log_after.relogged_bytes - log_before.relogged_bytes) /
          std::max<uint64_t>(1, log_after.bytes - log_before.bytes)));
}

// With a push log, what it wrote in a pair run, and the bound its write rate sets: every key a
// pair pushes is logged, so the pair moves at most (write rate / bytes logged per key) keys/s.
void ReportPairLog(const TierBenchReport::LookaheadRun& run, double memory_keys_per_second,
                   uint64_t writes, double write_mb, const Progress& progress) {
  if (writes == 0 || run.log_mb_per_second <= 0) return;
  const double bound_keys_per_second = run.log_mb_per_second * 1e6 / run.log_bytes_per_key;
  progress(StringPrintf(
      "  push log, look-ahead %u: %llu group writes of %.2f MB, written at %.0f MB/s; %.0f bytes "
      "logged per key: at most %.2fM keys/s, a pair ratio of at most %.3f at that write rate",
      run.lookahead, static_cast<unsigned long long>(writes), write_mb / writes,
      run.log_mb_per_second, run.log_bytes_per_key, bound_keys_per_second / 1e6,
      TierRatio(bound_keys_per_second, memory_keys_per_second)));
}

// The training-shaped pull+push pair on the tiered table, once per look-ahead depth.
Status RunLookaheadPairs(const TierBenchOptions& config, TierReplay& replay,
                         embedding::EmbeddingTable& tiered, const embedding::PushLog* log,
                         TierBenchReport* report, const Progress& progress) {
  const std::string durability = DurabilityName(config.durability);
  for (uint32_t lookahead : config.lookaheads) {
    const embedding::PushLog::Stats log_before = log ? log->stats() : embedding::PushLog::Stats{};
    const embedding::TierStats stats_before = tiered.tier_stats();
    const uint64_t prefetched_before = tiered.prefetch_stats().prefetched_rows;
    TierBenchReport::LookaheadRun run;
    run.lookahead = lookahead;
    ASSIGN_OR_RETURN(run.pair, RunTierPhase(config, tiered, replay, TierPhase::kPullThenPush,
                                            config.seconds, lookahead));
    const embedding::TierStats stats = tiered.tier_stats();
    const double lookups =
        static_cast<double>(stats.hits + stats.misses - stats_before.hits - stats_before.misses);
    run.hit_rate = lookups > 0 ? (stats.hits - stats_before.hits) / lookups : 0.0;
    run.prefetched_rows = tiered.prefetch_stats().prefetched_rows - prefetched_before;
    const double keys = std::max(1.0, run.pair.keys_per_second * run.pair.seconds);
    run.reads_per_key = (stats.loaded - stats_before.loaded + run.prefetched_rows) / keys;
    run.writebacks_per_key = (stats.writebacks - stats_before.writebacks) / keys;
    run.cold_file_reads_per_key = (stats.cold_file_hits - stats_before.cold_file_hits) / keys;
    run.kept_changed_per_key = (stats.kept_changed - stats_before.kept_changed) / keys;
    const embedding::PushLog::Stats log_after = log ? log->stats() : embedding::PushLog::Stats{};
    const double log_mb = (log_after.bytes - log_before.bytes) / 1e6;
    const double log_seconds = log_after.write_seconds - log_before.write_seconds;
    run.log_bytes_per_key = log_mb * 1e6 / keys;
    run.log_mb_per_second = log_seconds > 0 ? log_mb / log_seconds : 0;
    progress(PhaseLine(
        StringPrintf("pull+push, tiered, %s, look-ahead %u", durability.c_str(), lookahead).c_str(),
        run.pair));
    progress(StringPrintf(
        "  tiered/in memory, look-ahead %u: pull+push pair %.3f (its pulls %.3f, its pushes "
        "%.3f), CPU per key %.2fx; hit rate %.3f, %llu rows prefetched; %.3f rows read per key, "
        "%.3f of them from the cold row file; %.3f written back to RocksDB per key, %.3f kept "
        "changed in the cold row file",
        lookahead, TierRatio(run.pair.keys_per_second, report->memory_pair.keys_per_second),
        TierRatio(run.pair.pull_keys_per_second, report->memory_pair.pull_keys_per_second),
        TierRatio(run.pair.push_keys_per_second, report->memory_pair.push_keys_per_second),
        TierRatio(run.pair.cpu_ns_per_key, report->memory_pair.cpu_ns_per_key), run.hit_rate,
        static_cast<unsigned long long>(run.prefetched_rows), run.reads_per_key,
        run.cold_file_reads_per_key, run.writebacks_per_key, run.kept_changed_per_key));
    ReportPairLog(run, report->memory_pair.keys_per_second, log_after.writes - log_before.writes,
                  log_mb, progress);
    report->tiered_pairs.push_back(run);
  }
  return Status::Ok();
}

// The cold path's floor on the tiered table's store and over a plain file, and the bounds they set
// on each pull+push run.
Status ReportColdPath(const TierBenchOptions& config, embedding::RocksStore& store,
                      const embedding::EmbeddingTable& tiered, TierBenchReport* report,
                      const Progress& progress) {
  embedding::RocksTable& disk = *store.Table(BenchSpec(config).name);
  const double seconds = std::min(config.seconds, 3.0);
  ASSIGN_OR_RETURN(report->cold_path, MeasureColdPath(config.rows, disk, tiered, seconds));
  ASSIGN_OR_RETURN(report->file_path,
                   MeasureFilePath(config.data_dir, config.rows,
                                   disk.floats_per_row() * sizeof(float), seconds));
  const ColdPathFigures& cold = report->cold_path;
  const FilePathFigures& file = report->file_path;
  progress(ColdPathLine(cold, file));
  if (config.cold_file_percent > 0) {
    ASSIGN_OR_RETURN(
        report->cold_file,
        MeasureColdFile(config.data_dir, config.rows, disk.floats_per_row() + 1,
                        BudgetBytes(config) / 100 * config.cold_file_percent, seconds));
    progress(StringPrintf(
        "  the cold row file alone: a row found in %.0f ns of CPU, stored in %.0f ns (batches of "
        "%u random keys); once the kernel has written the file back, the first store into each "
        "page costs %.1f us more (a write fault)",
        report->cold_file.find_ns, report->cold_file.store_ns, kColdFileBatch,
        report->cold_file.fault_us));
  }
  const double memory_ns = report->memory_pair.cpu_ns_per_key;
  for (const TierBenchReport::LookaheadRun& run : report->tiered_pairs) {
    // Rows read from the cold row file, and changed rows kept there, at a plain file's costs; the
    // others at RocksDB's.
    const double file_reads = run.cold_file_reads_per_key, kept = run.kept_changed_per_key;
    const double rocks_reads = std::max(0.0, run.reads_per_key - file_reads);
    const double reads = file_reads + rocks_reads, writes = run.writebacks_per_key + kept;
    const double floor_ns = ColdPathFloorNs(memory_ns, rocks_reads, cold.read_us,
                                            run.writebacks_per_key, cold.write_us) +
                            1e3 * (file_reads * file.read_us + kept * file.write_us);
    const double file_ns = ColdPathFloorNs(memory_ns, reads, file.read_us, writes, file.write_us);
    progress(StringPrintf(
        "  look-ahead %u: %.3f rows read and %.3f written back per key (%.3f and %.3f of them in "
        "RocksDB) cost at least %.0f ns of CPU per key with memory's %.0f, %.2fx memory's: a "
        "pair ratio of at most %.3f where CPU bounds it (measured %.3f at %.0f ns); over a plain "
        "file at least %.0f ns, at most %.3f",
        run.lookahead, reads, writes, rocks_reads, run.writebacks_per_key, floor_ns, memory_ns,
        TierRatio(floor_ns, memory_ns), TierRatio(memory_ns, floor_ns),
        TierRatio(run.pair.keys_per_second, report->memory_pair.keys_per_second),
        run.pair.cpu_ns_per_key, file_ns, TierRatio(memory_ns, file_ns)));
  }
  return Status::Ok();
}

// What the tiered table left on disk, after its changed rows were flushed.
Status ReportDisk(const TierBenchOptions& config, embedding::RocksStore& store,
                  embedding::EmbeddingTable& tiered, TierBenchReport* report,
                  const Progress& progress) {
  const embedding::PushLog* log = store.push_log();
  RETURN_IF_ERROR(tiered.FlushDirtyRows());
  RETURN_IF_ERROR(store.Flush());
  const DiskUse disk = DirectoryBytes(config.data_dir + "/rows");
  report->disk_bytes = disk.rows;
  report->disk_bytes_per_row = static_cast<double>(report->disk_bytes) / tiered.rows();
  report->raw_row_bytes = FloatsPerRow(BenchSpec(config)) * static_cast<uint32_t>(sizeof(float));
  progress(StringPrintf(
      "  on disk: %.2f GB, %.1f bytes per row (raw row with state: %u bytes); push log %.2f GB "
      "(%llu pushes waited for its full segments to be retired; segments retired: %llu, spare "
      "files of zeros written: %llu)",
      report->disk_bytes / 1e9, report->disk_bytes_per_row, report->raw_row_bytes,
      disk.push_log / 1e9, static_cast<unsigned long long>(log ? log->stats().stalls : 0),
      static_cast<unsigned long long>(log ? log->stats().segments_retired : 0),
      static_cast<unsigned long long>(log ? log->stats().spares_filled : 0)));
  return Status::Ok();
}

// Tiered, a budget of budget_fraction of the rows: bulk load, warm up with the hottest rows (as a
// running server's memory would hold them), the two phases, and what is on disk after.
Status MeasureTiered(const TierBenchOptions& config, const TierRequests& requests,
                     TierBenchReport* report, const Progress& progress) {
  ASSIGN_OR_RETURN(auto store, OpenStore(config));
  embedding::MemoryBudget budget(report->budget_bytes);
  RETURN_IF_ERROR(BulkLoadTiered(config, *store, report, progress));
  ASSIGN_OR_RETURN(auto tiered, OpenTiered(config, *store, &budget));
  TierReplay replay(requests, config.threads);
  const auto start = Clock::now();
  RETURN_IF_ERROR(PullHottest(config, *tiered, report->hot_rows));
  report->warm_up_seconds = SecondsSince(start);
  progress(StringPrintf("tiered: %.0f hottest rows pulled into memory in %.1f s",
                        static_cast<double>(report->hot_rows), report->warm_up_seconds));
  const embedding::TierStats before = tiered->tier_stats();
  ASSIGN_OR_RETURN(report->tiered_pull,
                   RunTierPhase(config, *tiered, replay, TierPhase::kPull, config.seconds));
  const embedding::PushLog* log = store->push_log();
  const embedding::PushLog::Stats log_before = log ? log->stats() : embedding::PushLog::Stats{};
  ASSIGN_OR_RETURN(report->tiered_push,
                   RunTierPhase(config, *tiered, replay, TierPhase::kPush, config.seconds));
  const embedding::PushLog::Stats log_after = log ? log->stats() : embedding::PushLog::Stats{};
  const embedding::TierStats after = tiered->tier_stats();
  const std::string durability = DurabilityName(config.durability);
  progress(PhaseLine("pull, tiered", report->tiered_pull));
  progress(PhaseLine(("push, tiered, " + durability).c_str(), report->tiered_push));
  progress(StringPrintf(
      "  tiered/in memory: pull %.3f, push %.3f; CPU per key: pull %.2fx, push %.2fx",
      TierRatio(report->tiered_pull.keys_per_second, report->memory_pull.keys_per_second),
      TierRatio(report->tiered_push.keys_per_second, report->memory_push.keys_per_second),
      TierRatio(report->tiered_pull.cpu_ns_per_key, report->memory_pull.cpu_ns_per_key),
      TierRatio(report->tiered_push.cpu_ns_per_key, report->memory_push.cpu_ns_per_key)));
  ReportPushLog(config, *report, log_before, log_after, progress);
  RETURN_IF_ERROR(RunLookaheadPairs(config, replay, *tiered, log, report, progress));
  const double lookups =
      static_cast<double>(after.hits + after.misses - before.hits - before.misses);
  report->hit_rate = lookups > 0 ? (after.hits - before.hits) / lookups : 0.0;
  report->evictions = after.evictions - before.evictions;
  report->writebacks = after.writebacks - before.writebacks;
  report->resident_rows = after.resident_rows;
  progress(StringPrintf(
      "  hit rate %.3f (CLOCK; the hottest rows alone would give %.3f), evictions "
      "%llu, write-backs %llu, resident rows %llu",
      report->hit_rate, (report->tiered_pull.hot_share + report->tiered_push.hot_share) / 2,
      static_cast<unsigned long long>(report->evictions),
      static_cast<unsigned long long>(report->writebacks),
      static_cast<unsigned long long>(report->resident_rows)));
  RETURN_IF_ERROR(ReportColdPath(config, *store, *tiered, report, progress));
  return ReportDisk(config, *store, *tiered, report, progress);
}

// Recovery: the pusher pushes with logging; it is killed; reopening is timed.
Status MeasureRecovery(const TierBenchOptions& config, TierBenchReport* report,
                       const Progress& progress) {
  {
    ChildProcess child(config.pusher_command);
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (!std::filesystem::exists(config.data_dir + "/pushing") && Clock::now() < deadline &&
           child.running()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(config.seconds / 2));
    child.Signal(SIGKILL);
    if (child.WaitExit(std::chrono::seconds(30)) != 128 + SIGKILL) {
      return Internal("the pushing child was not killed by SIGKILL");
    }
  }
  const auto start = Clock::now();
  ASSIGN_OR_RETURN(auto store, OpenStore(config));
  report->recovery_open_seconds = SecondsSince(start);
  report->recovery_replayed_writes = store->replayed_log_writes();
  embedding::MemoryBudget budget(BudgetBytes(config));
  ASSIGN_OR_RETURN(auto tiered, OpenTiered(config, *store, &budget));
  report->recovery_seconds = SecondsSince(start);
  report->recovered_rows = tiered->rows();
  progress(
      StringPrintf("recovery after SIGKILL while pushing: %.2f s (RocksDB open with the replay "
                   "of its log and the push log %.2f s, the rest opening the table of %llu rows); "
                   "%.2fM logged writes replayed, %.2f us of recovery each",
                   *report->recovery_seconds, report->recovery_open_seconds,
                   static_cast<unsigned long long>(report->recovered_rows),
                   static_cast<double>(report->recovery_replayed_writes) / 1e6,
                   report->recovery_replayed_writes == 0
                       ? 0.0
                       : *report->recovery_seconds * 1e6 /
                             static_cast<double>(report->recovery_replayed_writes)));
  return Status::Ok();
}

}  // namespace

Status CheckTierBenchOptions(const TierBenchOptions& options) {
  if (options.data_dir.empty()) return InvalidArgument("--data-dir is required");
  if (!embedding::OptimizerKindFromName(options.optimizer).ok()) {
    return InvalidArgument("--optimizer '" + options.optimizer + "' is unknown");
  }
  for (auto [flag, value] : {std::pair{"dim", options.dim}, std::pair{"threads", options.threads},
                             std::pair{"keys-per-request", options.keys_per_request}}) {
    if (value == 0 || value > 1'000'000) {
      return InvalidArgument(std::string("--") + flag + " must be in 1..1000000");
    }
  }
  if (options.lookaheads.empty()) return InvalidArgument("--lookahead needs at least one depth");
  for (uint32_t lookahead : options.lookaheads) {
    if (lookahead > 1024) return InvalidArgument("--lookahead depths must be in 0..1024");
  }
  if (options.rows < 4 * uint64_t{options.keys_per_request} || !(options.seconds > 0) ||
      !(options.budget_fraction > 0) || options.budget_fraction > 1) {
    return InvalidArgument(
        "--rows must be at least 4x --keys-per-request, --seconds and "
        "--budget-percent (1..100) positive");
  }
  return Status::Ok();
}

Result<TierBenchReport> RunTierBench(const TierBenchOptions& config,
                                     const std::function<void(const std::string&)>& progress) {
  RETURN_IF_ERROR(CheckTierBenchOptions(config));
  std::error_code error;
  if (std::filesystem::exists(config.data_dir) &&
      !std::filesystem::is_empty(config.data_dir, error)) {
    return InvalidArgument("--data-dir '" + config.data_dir + "' is not empty");
  }
  std::filesystem::create_directories(config.data_dir, error);
  const TableSpec spec = BenchSpec(config);
  progress(
      StringPrintf("table: %llu rows of dim %u, %s (%u floats per row with state), Zipf %.2f, "
                   "%u keys per request, %u threads, %.0f s per phase",
                   static_cast<unsigned long long>(config.rows), config.dim,
                   config.optimizer.c_str(), FloatsPerRow(spec), config.exponent,
                   config.keys_per_request, config.threads, config.seconds));
  TierBenchReport report;
  report.budget_bytes = BudgetBytes(config);
  report.hot_rows = report.budget_bytes / RowBytes(config);
  const auto drawing = Clock::now();
  const TierRequests requests(config, report.hot_rows, kTierRequestsPerThread);
  progress(StringPrintf("requests: %u a thread drawn in %.1f s, replayed by every table",
                        kTierRequestsPerThread, SecondsSince(drawing)));
  RETURN_IF_ERROR(MeasureInMemory(config, requests, &report, progress));
  RETURN_IF_ERROR(MeasureTiered(config, requests, &report, progress));
  if (!config.pusher_command.empty()) RETURN_IF_ERROR(MeasureRecovery(config, &report, progress));
  return report;
}

Status PushUntilKilled(const TierBenchOptions& config) {
  RETURN_IF_ERROR(CheckTierBenchOptions(config));
  ASSIGN_OR_RETURN(auto store, OpenStore(config));
  embedding::MemoryBudget budget(BudgetBytes(config));
  ASSIGN_OR_RETURN(auto table, OpenTiered(config, *store, &budget));
  std::ofstream(config.data_dir + "/pushing") << "1\n";
  const TierRequests requests(config, 0, 64);
  TierReplay replay(requests, config.threads);
  return RunTierPhase(config, *table, replay, TierPhase::kPush, 60).status();
}

}  // namespace ember::bench
