// `ember bench-tier`: the RocksDB tier of one server's table against the same table all in
// memory, in one run. Both take the same Zipf pulls and then pushes, from several threads, at the
// storage layer (EmbeddingTable, no network: `ember bench` measures that part). It prints keys/s
// and request latency for both, the tier's hit rate, bytes on disk per row, and the time a server
// needs to reopen its data directory after being killed with SIGKILL while pushing.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <unordered_set>
#include <vector>

#include "app/command_support.h"
#include "app/commands.h"
#include "common/child_process.h"
#include "embedding/embedding_table.h"
#include "embedding/initializer.h"
#include "embedding/rocks_store.h"
#include "embedding/table_config.h"
#include "ps/server/server.h"
#include "trainer/zipf.h"

namespace ember::app {
namespace {

using Clock = std::chrono::steady_clock;

struct TierBenchConfig {
  uint64_t rows = 20'000'000;
  uint32_t dim = 16;
  std::string optimizer = "adagrad";
  double budget_fraction = 0.25;
  double exponent = 1.05;
  uint32_t keys_per_request = 4096;
  uint32_t threads = 2;
  double seconds = 10;
  std::string data_dir;
  bool log_pushes = true;  // --durability ack (default) or flush
  bool sync_log = false;   // --durability sync
};

struct PhaseFigures {
  double keys_per_second = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  // Share of requested keys among the hot_rows most popular: the hit rate of a memory that held
  // exactly those rows (a static oracle, for comparison with the eviction policy's).
  double hot_share = 0;
};

TableSpec BenchSpec(const TierBenchConfig& config) {
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

Result<std::unique_ptr<embedding::RocksStore>> OpenStore(const TierBenchConfig& config) {
  const TableSpec spec = BenchSpec(config);
  return embedding::RocksStore::Open({config.data_dir + "/rows"},
                                     {{spec.name, FloatsPerRow(spec)}});
}

// Writes every row's initial value straight to disk (a bulk load, as a restore would).
Status BulkLoad(const TierBenchConfig& config, embedding::RocksTable& disk,
                const embedding::EmbeddingTable& shape) {
  const TableSpec spec = BenchSpec(config);
  auto optimizer = embedding::RowOptimizer::Create(spec.optimizer, spec.dim);
  std::vector<float> row(FloatsPerRow(spec));
  embedding::RowWrites writes(disk);
  for (uint64_t key = 0; key < config.rows; ++key) {
    embedding::InitializeRow(spec, key, std::span<float>(row.data(), spec.dim));
    optimizer->InitState(std::span<float>(row.data() + spec.dim, row.size() - spec.dim));
    writes.Put(shape.PartitionOf(key), key, row);
    if (writes.size() == 65536) RETURN_IF_ERROR(disk.Write(writes));
  }
  return disk.Write(writes);
}

constexpr uint64_t kSamplerSalt = 7;

// Pulls the `count` most popular keys, most popular first, as a server that has run for a while
// holds them.
Status PullHottest(const TierBenchConfig& config, embedding::EmbeddingTable& table,
                   uint64_t count) {
  const trainer::ZipfSampler sampler(config.rows, config.exponent, true, kSamplerSalt);
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

// Runs Zipf requests (pulls, or pushes) from config.threads threads for config.seconds.
Result<PhaseFigures> RunPhase(const TierBenchConfig& config, embedding::EmbeddingTable& table,
                              bool push, double seconds, uint64_t hot_rows = 0) {
  const trainer::ZipfSampler sampler(config.rows, config.exponent, true, kSamplerSalt);
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> latencies(config.threads);
  std::vector<uint64_t> keys_done(config.threads, 0);
  std::vector<uint64_t> hot_keys(config.threads, 0);
  std::vector<Status> statuses(config.threads);
  std::vector<std::thread> threads;
  const auto start = Clock::now();
  for (uint32_t t = 0; t < config.threads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(100 + t);
      std::unordered_set<uint64_t> unique;
      std::unordered_set<uint64_t> hot;
      std::vector<uint64_t> keys;
      std::vector<float> values(size_t{config.keys_per_request} * config.dim, 1e-3f);
      while (!stop.load(std::memory_order_relaxed) && statuses[t].ok()) {
        unique.clear();
        hot.clear();
        // Bounded: at most 4x the request size in draws.
        for (uint32_t draw = 0; draw < 4 * config.keys_per_request &&
                                unique.size() < config.keys_per_request;
             ++draw) {
          const uint64_t rank = sampler.Rank(trainer::UniformDouble(rng));
          const uint64_t key = sampler.KeyOfRank(rank) % config.rows;
          unique.insert(key);
          if (rank < hot_rows) hot.insert(key);
        }
        hot_keys[t] += hot.size();
        keys.assign(unique.begin(), unique.end());
        std::span<float> rows(values.data(), keys.size() * config.dim);
        const auto begin = Clock::now();
        statuses[t] = push ? table.Push(keys, rows) : table.Pull(keys, rows);
        latencies[t].push_back(std::chrono::duration<double, std::milli>(Clock::now() - begin).count());
        keys_done[t] += keys.size();
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& thread : threads) thread.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  for (const Status& status : statuses) RETURN_IF_ERROR(status);
  std::vector<double> all;
  uint64_t keys = 0, hot = 0;
  for (uint32_t t = 0; t < config.threads; ++t) {
    all.insert(all.end(), latencies[t].begin(), latencies[t].end());
    keys += keys_done[t];
    hot += hot_keys[t];
  }
  std::sort(all.begin(), all.end());
  PhaseFigures figures;
  figures.keys_per_second = keys / elapsed;
  figures.hot_share = keys > 0 ? static_cast<double>(hot) / keys : 0;
  if (!all.empty()) {
    figures.p50_ms = all[all.size() / 2];
    figures.p99_ms = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  }
  return figures;
}

uint64_t DirectoryBytes(const std::string& path) {
  uint64_t bytes = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(path, error)) {
    if (entry.is_regular_file(error)) bytes += entry.file_size(error);
  }
  return bytes;
}

void Print(const char* what, const PhaseFigures& figures) {
  std::printf("  %-22s %12.0f keys/s   p50 %8.3f ms   p99 %8.3f ms\n", what,
              figures.keys_per_second, figures.p50_ms, figures.p99_ms);
}

Result<std::unique_ptr<embedding::EmbeddingTable>> OpenTiered(const TierBenchConfig& config,
                                                              embedding::RocksStore& store,
                                                              embedding::MemoryBudget* budget) {
  embedding::TierOptions tier{store.Table("bench"), budget, config.log_pushes, config.sync_log};
  return embedding::EmbeddingTable::Create(BenchSpec(config), 1024, tier);
}

// The child side of the recovery measurement: pushes with logging until killed (60 s at most).
Status PushUntilKilled(const TierBenchConfig& config) {
  ASSIGN_OR_RETURN(auto store, OpenStore(config));
  const uint64_t row_bytes = uint64_t{FloatsPerRow(BenchSpec(config)) + 1} * sizeof(float);
  embedding::MemoryBudget budget(static_cast<uint64_t>(config.rows * config.budget_fraction) *
                                 row_bytes);
  ASSIGN_OR_RETURN(auto table, OpenTiered(config, *store, &budget));
  std::ofstream(config.data_dir + "/pushing") << "1\n";
  return RunPhase(config, *table, /*push=*/true, 60).status();
}

Status RunTierBench(const TierBenchConfig& config) {
  const TableSpec spec = BenchSpec(config);
  const uint64_t row_bytes = uint64_t{FloatsPerRow(spec) + 1} * sizeof(float);
  const uint64_t budget_bytes = static_cast<uint64_t>(config.rows * config.budget_fraction) * row_bytes;
  std::printf("table: %llu rows of dim %u, %s (%u floats per row with state), Zipf %.2f, "
              "%u keys per request, %u threads, %.0f s per phase\n",
              static_cast<unsigned long long>(config.rows), config.dim, config.optimizer.c_str(),
              FloatsPerRow(spec), config.exponent, config.keys_per_request, config.threads,
              config.seconds);

  // All in memory.
  {
    embedding::EmbeddingTable memory(spec, 1024);
    const auto start = Clock::now();
    std::vector<uint64_t> keys;
    std::vector<float> rows;
    for (uint64_t first = 0; first < config.rows; first += 65536) {
      keys.clear();
      for (uint64_t key = first; key < std::min(config.rows, first + 65536); ++key) keys.push_back(key);
      rows.resize(keys.size() * config.dim);
      RETURN_IF_ERROR(memory.Pull(keys, rows));
    }
    std::printf("in memory: populated in %.1f s, %.2f GB held\n",
                std::chrono::duration<double>(Clock::now() - start).count(), memory.bytes() / 1e9);
    ASSIGN_OR_RETURN(PhaseFigures pulls, RunPhase(config, memory, false, config.seconds));
    ASSIGN_OR_RETURN(PhaseFigures pushes, RunPhase(config, memory, true, config.seconds));
    Print("pull, in memory", pulls);
    Print("push, in memory", pushes);
  }

  // Tiered, a budget of budget_fraction of the rows.
  ASSIGN_OR_RETURN(auto store, OpenStore(config));
  embedding::MemoryBudget budget(budget_bytes);
  {
    ASSIGN_OR_RETURN(auto shape, OpenTiered(config, *store, nullptr));
    const auto start = Clock::now();
    RETURN_IF_ERROR(BulkLoad(config, *store->Table("bench"), *shape));
    RETURN_IF_ERROR(store->Flush());
    std::printf("tiered: bulk-loaded in %.1f s; budget %.2f GB (%.0f%% of the rows)\n",
                std::chrono::duration<double>(Clock::now() - start).count(), budget_bytes / 1e9,
                100 * config.budget_fraction);
  }
  ASSIGN_OR_RETURN(auto tiered, OpenTiered(config, *store, &budget));
  // Fill the memory with the hottest rows, as a running server's would be, then measure.
  {
    const auto start = Clock::now();
    RETURN_IF_ERROR(PullHottest(config, *tiered, budget_bytes / row_bytes));
    std::printf("tiered: %.0f hottest rows pulled into memory in %.1f s\n",
                static_cast<double>(budget_bytes / row_bytes),
                std::chrono::duration<double>(Clock::now() - start).count());
  }
  const embedding::TierStats before = tiered->tier_stats();
  const uint64_t hot_rows = budget_bytes / row_bytes;
  ASSIGN_OR_RETURN(PhaseFigures pulls, RunPhase(config, *tiered, false, config.seconds, hot_rows));
  ASSIGN_OR_RETURN(PhaseFigures pushes, RunPhase(config, *tiered, true, config.seconds, hot_rows));
  const embedding::TierStats after = tiered->tier_stats();
  Print("pull, tiered", pulls);
  Print(config.log_pushes ? (config.sync_log ? "push, tiered, sync" : "push, tiered, ack")
                          : "push, tiered, flush",
        pushes);
  const double lookups = static_cast<double>(after.hits + after.misses - before.hits - before.misses);
  std::printf("  hit rate %.3f (CLOCK; the hottest rows alone would give %.3f), evictions %llu, "
              "write-backs %llu, resident rows %llu\n",
              lookups > 0 ? (after.hits - before.hits) / lookups : 0.0,
              (pulls.hot_share + pushes.hot_share) / 2,
              static_cast<unsigned long long>(after.evictions - before.evictions),
              static_cast<unsigned long long>(after.writebacks - before.writebacks),
              static_cast<unsigned long long>(after.resident_rows));
  RETURN_IF_ERROR(tiered->FlushDirtyRows());
  RETURN_IF_ERROR(store->Flush());
  const uint64_t disk = DirectoryBytes(config.data_dir + "/rows");
  std::printf("  on disk: %.2f GB, %.1f bytes per row (raw row with state: %u bytes)\n",
              disk / 1e9, static_cast<double>(disk) / tiered->rows(),
              FloatsPerRow(spec) * static_cast<uint32_t>(sizeof(float)));
  tiered.reset();
  store.reset();

  // Recovery: a child pushes with logging; it is killed; reopening is timed.
  std::vector<std::string> argv = {"/proc/self/exe", "bench-tier", "--push-until-killed",
                                   "--data-dir", config.data_dir, "--rows",
                                   std::to_string(config.rows), "--dim", std::to_string(config.dim),
                                   "--optimizer", config.optimizer, "--durability",
                                   config.log_pushes ? (config.sync_log ? "sync" : "ack") : "flush"};
  {
    ChildProcess child(argv);
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
  ASSIGN_OR_RETURN(store, OpenStore(config));
  const double opened = std::chrono::duration<double>(Clock::now() - start).count();
  ASSIGN_OR_RETURN(tiered, OpenTiered(config, *store, &budget));
  std::printf("recovery after SIGKILL while pushing: %.2f s (RocksDB open with log replay %.2f s, "
              "counting %llu rows the rest)\n",
              std::chrono::duration<double>(Clock::now() - start).count(), opened,
              static_cast<unsigned long long>(tiered->rows()));
  return Status::Ok();
}

}  // namespace

int TierBenchCommand(int argc, char** argv) {
  const std::vector<FlagSpec> known = {
      {"rows", "N", "rows in the table (default 20000000)"},
      {"dim", "N", "row width (default 16)"},
      {"optimizer", "NAME", "sgd, adagrad (default), adam or ftrl"},
      {"budget-percent", "P", "memory budget as a percentage of the rows (default 25)"},
      {"threads", "N", "request threads (default 2)"},
      {"keys-per-request", "N", "distinct keys per request (default 4096)"},
      {"seconds", "S", "seconds per measured phase (default 10)"},
      {"data-dir", "DIR", "where the tiered table's RocksDB goes (required; new or empty)"},
      {"durability", "MODE", "ack (default), sync or flush, for the tiered pushes"},
      {"push-until-killed", "", "internal: the child of the recovery measurement"},
  };
  int exit_code = 0;
  auto flags = ParseCommandFlags(argc, argv, "ember bench-tier --data-dir DIR [options]",
                                 "Compares a table with a RocksDB tier and a memory budget with "
                                 "the same table all in memory, and times recovery after SIGKILL.",
                                 known, &exit_code);
  if (!flags) return exit_code;
  TierBenchConfig config;
  auto fail = [](const Status& status) {
    std::fprintf(stderr, "ember bench-tier: %s\n", status.ToString().c_str());
    return 2;
  };
  for (auto [name, target] : {std::pair{"rows", &config.rows}}) {
    auto value = flags->GetUint(name);
    if (!value.ok()) return fail(value.status());
    *target = value->value_or(*target);
  }
  for (auto [name, target] : {std::pair{"dim", &config.dim}, std::pair{"threads", &config.threads},
                              std::pair{"keys-per-request", &config.keys_per_request}}) {
    auto value = flags->GetUint(name);
    if (!value.ok()) return fail(value.status());
    if (value->has_value() && (**value == 0 || **value > 1'000'000)) {
      return fail(InvalidArgument(std::string("--") + name + " must be in 1..1000000"));
    }
    *target = static_cast<uint32_t>(value->value_or(*target));
  }
  auto percent = flags->GetUint("budget-percent");
  auto seconds = flags->GetUint("seconds");
  if (!percent.ok()) return fail(percent.status());
  if (!seconds.ok()) return fail(seconds.status());
  config.budget_fraction = percent->value_or(25) / 100.0;
  config.seconds = static_cast<double>(seconds->value_or(10));
  config.optimizer = flags->Get("optimizer", config.optimizer);
  config.data_dir = flags->Get("data-dir");
  auto durability = ps::ParseDurability(flags->Get("durability", "ack"));
  if (!durability.ok()) return fail(durability.status());
  config.log_pushes = *durability != ps::Durability::kFlush;
  config.sync_log = *durability == ps::Durability::kSync;
  if (config.data_dir.empty()) return fail(InvalidArgument("--data-dir is required"));
  if (!embedding::OptimizerKindFromName(config.optimizer).ok()) {
    return fail(InvalidArgument("--optimizer '" + config.optimizer + "' is unknown"));
  }
  if (config.rows < 4 * uint64_t{config.keys_per_request} || config.seconds <= 0 ||
      config.budget_fraction <= 0 || config.budget_fraction > 1) {
    return fail(InvalidArgument("--rows must be at least 4x --keys-per-request, --seconds and "
                                "--budget-percent (1..100) positive"));
  }
  if (flags->Has("push-until-killed")) {
    Status status = PushUntilKilled(config);
    if (!status.ok()) return fail(status);
    return 0;
  }
  std::error_code error;
  if (std::filesystem::exists(config.data_dir) && !std::filesystem::is_empty(config.data_dir, error)) {
    return fail(InvalidArgument("--data-dir '" + config.data_dir + "' is not empty"));
  }
  std::filesystem::create_directories(config.data_dir, error);
  Status status = RunTierBench(config);
  if (!status.ok()) {
    std::fprintf(stderr, "ember bench-tier: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace ember::app
