// The checkpoint benchmark: full against incremental cuts, a chain's restore and compaction.
#include "bench/checkpoint_bench.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <random>

#include "common/checkpoint_layout.h"
#include "common/file_io.h"
#include "common/progress_meter.h"
#include "common/string_printf.h"
#include "embedding/embedding_table.h"
#include "embedding/table_config.h"
#include "local/local_cluster.h"
#include "ps/client/checkpoint.h"
#include "ps/client/checkpoint_compact.h"

namespace ember::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr Millis kTimeout{3'600'000};
constexpr size_t kKeysPerPush = 65536;
constexpr char kTable[] = "bench";

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n == 0 ? 0 : n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

TableSpec BenchSpec(const CheckpointBenchOptions& options) {
  TableSpec spec;
  spec.name = kTable;
  spec.dim = options.dim;
  spec.seed = 1;
  spec.optimizer.kind = *embedding::OptimizerKindFromName(options.optimizer);
  return spec;
}

// Pushes a small gradient for each of `keys` (creating the rows that are missing).
Status PushAll(ps::Client& client, std::span<const uint64_t> keys, uint32_t dim) {
  const std::vector<float> gradients(kKeysPerPush * dim, 0.01f);
  for (size_t at = 0; at < keys.size(); at += kKeysPerPush) {
    const size_t n = std::min(kKeysPerPush, keys.size() - at);
    RETURN_IF_ERROR(client
                        .Push(kTable, keys.subspan(at, n),
                              std::span<const float>(gradients).first(n * dim))
                        .Wait());
  }
  return Status::Ok();
}

// Bytes of the partition files of the checkpoint in `dir`.
uint64_t TableBytes(const Manifest& manifest) {
  uint64_t bytes = 0;
  for (const ManifestFile& file : manifest.files) {
    if (file.path.rfind("tables/", 0) == 0) bytes += file.bytes;
  }
  return bytes;
}

// Cuts a checkpoint of the servers into `dir` as `chaining` says, with its manifest; returns its
// bytes and the time it took (what training would wait for), and the written link.
Result<std::pair<CutFigures, ChainLink>> Cut(ps::Client& client, const std::string& dir,
                                             uint64_t step,
                                             const ps::CheckpointChaining& chaining) {
  const auto start = Clock::now();
  ASSIGN_OR_RETURN(Manifest manifest, ps::CheckpointServers(client, dir, step, kTimeout, chaining));
  RETURN_IF_ERROR(WriteManifest(dir, manifest));
  CutFigures figures;
  figures.seconds = SecondsSince(start);
  ASSIGN_OR_RETURN(Manifest written, ReadManifest(dir));
  figures.bytes = TableBytes(written);
  return std::pair{figures, ChainLink{dir, std::move(written)}};
}

ps::CheckpointChaining Full() { return {}; }
ps::CheckpointChaining Base() { return {.chained = true, .predecessor = std::nullopt}; }
ps::CheckpointChaining After(const ChainLink& link) {
  return {.chained = true, .predecessor = link};
}

std::string Mb(uint64_t bytes) { return StringPrintf("%.1f MB", bytes / 1e6); }

}  // namespace

Status CheckCheckpointBenchOptions(const CheckpointBenchOptions& options) {
  if (options.rows == 0) return InvalidArgument("--rows must be at least 1");
  if (options.dim == 0) return InvalidArgument("--dim must be at least 1");
  if (!embedding::OptimizerKindFromName(options.optimizer).ok()) {
    return InvalidArgument("--optimizer: unknown optimizer '" + options.optimizer + "'");
  }
  if (options.servers == 0 || options.partitions < options.servers) {
    return InvalidArgument("--servers must be at least 1 and at most --partitions");
  }
  for (double percent : options.changed_percent) {
    if (!(percent > 0 && percent <= 100)) {
      return InvalidArgument("--changed: each share must be in (0, 100], got " +
                             StringPrintf("%g", percent));
    }
  }
  if (!(options.chain_changed_percent > 0 && options.chain_changed_percent <= 100)) {
    return InvalidArgument("--chain-changed must be in (0, 100]");
  }
  if (options.rounds == 0) return InvalidArgument("--rounds must be at least 1");
  if (options.chain < 2) return InvalidArgument("--chain must be at least 2 (a base and one more)");
  if (options.dir.empty()) return InvalidArgument("--dir is required");
  if (!(options.budget_fraction > 0 && options.budget_fraction <= 1)) {
    return InvalidArgument("--budget-percent must be in (0, 100]");
  }
  return Status::Ok();
}

namespace {

namespace fs = std::filesystem;
using Progress = std::function<void(const std::string&)>;

// One run against its cluster: the rows' keys in a shuffled order, and the cut steps taken.
struct CheckpointRun {
  const CheckpointBenchOptions& options;
  ps::Client& client;
  const TableSpec& spec;
  const std::string& dir;
  const Progress& progress;
  std::vector<uint64_t> keys;
  size_t next_slice = 0;
  uint64_t step = 0;

  // Pushes a share of distinct rows, another slice of the shuffled keys each time.
  Status Change(double percent) {
    const size_t n = std::max<size_t>(1, static_cast<size_t>(options.rows * percent / 100));
    std::vector<uint64_t> slice;
    slice.reserve(n);
    for (size_t i = 0; i < n; ++i) slice.push_back(keys[(next_slice + i) % keys.size()]);
    next_slice = (next_slice + n) % keys.size();
    return PushAll(client, slice, spec.dim);
  }
  void Remove(const std::string& path) {
    std::error_code error;
    fs::remove_all(path, error);
  }
};

// Creates every row, then shuffles the keys for the changes.
Status Populate(CheckpointRun& run, CheckpointBenchReport& report) {
  run.keys.resize(run.options.rows);
  std::iota(run.keys.begin(), run.keys.end(), uint64_t{0});
  const auto start = Clock::now();
  ProgressMeter meter({.label = "populating", .unit = "rows", .total = run.options.rows});
  for (size_t at = 0; at < run.keys.size(); at += kKeysPerPush * 16) {
    const size_t n = std::min(kKeysPerPush * 16, run.keys.size() - at);
    RETURN_IF_ERROR(
        PushAll(run.client, std::span<const uint64_t>(run.keys).subspan(at, n), run.spec.dim));
    meter.Add(n);
  }
  report.populate_seconds = SecondsSince(start);
  run.progress(StringPrintf("populated in %.1f s", report.populate_seconds));
  std::mt19937_64 random(7);
  std::shuffle(run.keys.begin(), run.keys.end(), random);
  return Status::Ok();
}

// For one share of changed rows: a base, the change, then a full and an incremental cut, in
// alternating order, round after round; medians.
Result<CheckpointBenchReport::Share> MeasureShare(CheckpointRun& run, double percent) {
  std::vector<double> full_bytes, full_seconds, inc_bytes, inc_seconds, bytes_ratio,
      seconds_ratio;
  const std::string& dir = run.dir;
  for (uint32_t round = 0; round < run.options.rounds; ++round) {
    ASSIGN_OR_RETURN(auto base, Cut(run.client, dir + "/base", ++run.step, Base()));
    RETURN_IF_ERROR(run.Change(percent));
    // Alternated, so that neither always runs on a warmer page cache.
    Result<std::pair<CutFigures, ChainLink>> full = Internal("not cut");
    Result<std::pair<CutFigures, ChainLink>> incremental = Internal("not cut");
    if (round % 2 == 0) {
      incremental = Cut(run.client, dir + "/incremental", ++run.step, After(base.second));
      full = Cut(run.client, dir + "/full", run.step, Full());
    } else {
      full = Cut(run.client, dir + "/full", ++run.step, Full());
      incremental = Cut(run.client, dir + "/incremental", run.step, After(base.second));
    }
    RETURN_IF_ERROR(full.status());
    RETURN_IF_ERROR(incremental.status());
    full_bytes.push_back(full->first.bytes);
    full_seconds.push_back(full->first.seconds);
    inc_bytes.push_back(incremental->first.bytes);
    inc_seconds.push_back(incremental->first.seconds);
    bytes_ratio.push_back(static_cast<double>(incremental->first.bytes) / full->first.bytes);
    seconds_ratio.push_back(incremental->first.seconds / full->first.seconds);
    for (const char* name : {"/base", "/incremental", "/full"}) run.Remove(dir + name);
  }
  CheckpointBenchReport::Share share;
  share.changed_percent = percent;
  share.full = {static_cast<uint64_t>(Median(full_bytes)), Median(full_seconds)};
  share.incremental = {static_cast<uint64_t>(Median(inc_bytes)), Median(inc_seconds)};
  share.bytes_ratio = Median(bytes_ratio);
  share.seconds_ratio = Median(seconds_ratio);
  return share;
}

// A chain: a base, then increments after each change; returns its tip and a full checkpoint of
// the same rows.
Result<std::pair<ChainLink, ChainLink>> MeasureChain(CheckpointRun& run,
                                                     const std::string& chain_dir,
                                                     CheckpointBenchReport& report) {
  std::vector<double> increment_bytes, increment_seconds;
  std::optional<ChainLink> tip;
  for (uint32_t link = 0; link < run.options.chain; ++link) {
    if (link > 0) RETURN_IF_ERROR(run.Change(run.options.chain_changed_percent));
    const std::string link_dir = StringPrintf("%s/step-%09llu", chain_dir.c_str(),
                                              static_cast<unsigned long long>(++run.step));
    ASSIGN_OR_RETURN(auto cut, Cut(run.client, link_dir, run.step, tip ? After(*tip) : Base()));
    if (link == 0) {
      report.chain_base = cut.first;
    } else {
      increment_bytes.push_back(cut.first.bytes);
      increment_seconds.push_back(cut.first.seconds);
    }
    tip = cut.second;
  }
  report.chain_increment = {static_cast<uint64_t>(Median(increment_bytes)),
                            Median(increment_seconds)};
  ASSIGN_OR_RETURN(auto full, Cut(run.client, run.dir + "/full", run.step, Full()));
  run.progress(StringPrintf("chain of %u: base %s in %.2f s, increments (%g%% changed each) %s "
                            "in %.2f s (medians)",
                            run.options.chain, Mb(report.chain_base.bytes).c_str(),
                            report.chain_base.seconds, run.options.chain_changed_percent,
                            Mb(report.chain_increment.bytes).c_str(),
                            report.chain_increment.seconds));
  return std::pair{*tip, full.second};
}

// Restoring the chain's tip against the full checkpoint (alternated), then folding the chain.
Status MeasureRestoreAndCompaction(CheckpointRun& run, const ChainLink& tip,
                                   const ChainLink& full, CheckpointBenchReport& report) {
  std::vector<double> restore_chain, restore_full;
  for (uint32_t round = 0; round < run.options.rounds; ++round) {
    for (bool chained : {round % 2 == 0, round % 2 != 0}) {
      const auto start = Clock::now();
      RETURN_IF_ERROR(
          ps::RestoreServers(run.client, chained ? tip.dir : full.dir, kTimeout).status());
      (chained ? restore_chain : restore_full).push_back(SecondsSince(start));
    }
  }
  report.restore_chain_seconds = Median(restore_chain);
  report.restore_full_seconds = Median(restore_full);
  run.progress(StringPrintf("restore: the chain's tip %.2f s, a full checkpoint of the same rows "
                            "%.2f s (medians of %u, alternated)",
                            report.restore_chain_seconds, report.restore_full_seconds,
                            run.options.rounds));
  const auto start = Clock::now();
  ASSIGN_OR_RETURN(ps::Compaction folded,
                   ps::CompactCheckpoint(tip.dir, ps::DefaultCompactionDir(tip.dir)));
  report.compact_seconds = SecondsSince(start);
  report.compacted_bytes = folded.bytes;
  run.progress(StringPrintf("compaction of the chain into a base: %.2f s, %s",
                            report.compact_seconds, Mb(report.compacted_bytes).c_str()));
  return Status::Ok();
}

// The cluster the run checkpoints: in memory, or tiered with its budget.
local::LocalClusterOptions BenchClusterOptions(const CheckpointBenchOptions& options,
                                               const TableSpec& spec, const std::string& dir) {
  local::LocalClusterOptions cluster_options;
  cluster_options.num_servers = options.servers;
  cluster_options.num_partitions = options.partitions;
  const uint64_t row_bytes =
      (uint64_t{embedding::EmbeddingTable::PersistedFloatsPerRow(spec)} + 1) * sizeof(float);
  if (options.tiered) {
    cluster_options.data_dir = dir + "/data";
    cluster_options.memory_budget_bytes = static_cast<uint64_t>(
        options.budget_fraction * static_cast<double>(options.rows * row_bytes) / options.servers);
  }
  return cluster_options;
}

}  // namespace

Result<CheckpointBenchReport> RunCheckpointBench(const CheckpointBenchOptions& options,
                                                 const Progress& progress) {
  RETURN_IF_ERROR(CheckCheckpointBenchOptions(options));
  std::error_code error;
  if (fs::exists(options.dir, error) && !fs::is_empty(options.dir, error)) {
    return InvalidArgument("--dir '" + options.dir + "' is not empty");
  }
  ASSIGN_OR_RETURN(const std::string dir, CanonicalDirectory(options.dir, "--dir"));
  RETURN_IF_ERROR(MakeDirectories(dir));
  const TableSpec spec = BenchSpec(options);
  const local::LocalClusterOptions cluster_options = BenchClusterOptions(options, spec, dir);
  local::LocalCluster cluster({spec}, cluster_options);
  RETURN_IF_ERROR(cluster.status());
  ASSIGN_OR_RETURN(auto client, cluster.Connect("checkpoint-bench"));
  progress(StringPrintf("ember bench-checkpoint: %llu rows of dim %u with %s state, %u servers, "
                        "%u partitions, %s",
                        static_cast<unsigned long long>(options.rows), options.dim,
                        options.optimizer.c_str(), options.servers, options.partitions,
                        options.tiered ? StringPrintf("tiered (%s of memory per server)",
                                                      Mb(cluster_options.memory_budget_bytes)
                                                          .c_str())
                                             .c_str()
                                       : "in memory"));
  CheckpointBenchReport report;
  CheckpointRun run{options, *client, spec, dir, progress};
  RETURN_IF_ERROR(Populate(run, report));
  progress("  changed    full cut               incremental cut        bytes inc/full  time inc/full");
  for (double percent : options.changed_percent) {
    ASSIGN_OR_RETURN(CheckpointBenchReport::Share share, MeasureShare(run, percent));
    report.shares.push_back(share);
    progress(StringPrintf("  %5.1f%%   %10s %7.2f s   %10s %7.2f s   %13.3f  %13.3f", percent,
                          Mb(share.full.bytes).c_str(), share.full.seconds,
                          Mb(share.incremental.bytes).c_str(), share.incremental.seconds,
                          share.bytes_ratio, share.seconds_ratio));
  }
  const std::string chain_dir = dir + "/chain";
  RETURN_IF_ERROR(MakeDirectories(chain_dir));
  ASSIGN_OR_RETURN(auto tip_and_full, MeasureChain(run, chain_dir, report));
  RETURN_IF_ERROR(
      MeasureRestoreAndCompaction(run, tip_and_full.first, tip_and_full.second, report));
  run.Remove(chain_dir);
  run.Remove(dir + "/full");
  return report;
}

}  // namespace ember::bench
