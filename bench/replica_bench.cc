// The freshness benchmark (replica_bench.h): the cluster, the load, the replica and the probe.
#include "bench/replica_bench.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "bench/internal/key_batches.h"
#include "bench/internal/phase.h"
#include "bench/internal/populate.h"
#include "bench/internal/request_driver.h"
#include "common/string_printf.h"
#include "embedding/table_config.h"
#include "local/local_cluster.h"
#include "ps/replica/replica.h"

namespace ember::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kTable = "bench";
constexpr uint64_t kFirstProbeKey = uint64_t{1} << 62;
constexpr auto kProbeGiveUp = std::chrono::seconds(10);
constexpr uint64_t kMaxRequestsPerPhase = 100'000;
// How often a probe reads its key from the replica: the lag's resolution, and little load.
constexpr auto kProbeReadInterval = std::chrono::milliseconds(2);

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

BenchOptions LoadOptions(const ReplicaBenchOptions& options) {
  BenchOptions load;
  load.table = kTable;
  load.servers = options.servers;
  load.keys_per_request = options.keys_per_request;
  load.dim = options.dim;
  load.optimizer = options.optimizer;
  load.vocabulary = options.vocabulary;
  load.populate = options.vocabulary;
  load.seconds = options.seconds;
  return load;
}

// Pushes to keys of its own, one at a time; with a replica, times how long each acknowledged
// row takes to show there.
class Probe {
 public:
  Probe(ps::Client& trainer, ps::Client* reader, uint32_t dim, uint64_t first_key)
      : trainer_(trainer), reader_(reader), dim_(dim), next_key_(first_key) {}
  void Run(const std::atomic<bool>& stop, std::chrono::milliseconds interval) {
    const std::vector<float> gradient(dim_, 0.5f);
    std::vector<float> expected(dim_), seen(dim_);
    while (!stop.load()) {
      const std::vector<uint64_t> key = {next_key_++};
      if (!trainer_.Push(kTable, key, gradient).Wait().ok()) break;
      const auto acknowledged = Clock::now();
      if (reader_ != nullptr && trainer_.Lookup(kTable, key, expected).Wait().ok()) {
        bool shown = false;
        while (!shown && Clock::now() - acknowledged < kProbeGiveUp) {
          shown = reader_->Lookup(kTable, key, seen).Wait().ok() && seen == expected;
          if (!shown) std::this_thread::sleep_for(kProbeReadInterval);
        }
        if (shown) {
          lags_ms_.push_back(1000 * Seconds(Clock::now() - acknowledged));
        } else {
          ++lost_;
        }
      }
      std::this_thread::sleep_for(interval);
    }
  }
  const std::vector<double>& lags_ms() const { return lags_ms_; }
  uint64_t lost() const { return lost_; }
  uint64_t next_key() const { return next_key_; }

 private:
  ps::Client& trainer_;
  ps::Client* reader_;
  const uint32_t dim_;
  uint64_t next_key_;
  std::vector<double> lags_ms_;
  uint64_t lost_ = 0;
};

// A running replica of the cluster and a read-only client of it.
struct RunningReplica {
  std::unique_ptr<ps::Replica> replica;
  std::thread serving;
  std::unique_ptr<ps::Client> reader;
  ~RunningReplica() {
    reader.reset();
    if (replica) replica->RequestStop();
    if (serving.joinable()) serving.join();
  }
};

Result<std::unique_ptr<RunningReplica>> StartReplica(const std::string& scheduler,
                                                     uint32_t poll_ms, double* copy_seconds) {
  auto running = std::make_unique<RunningReplica>();
  ps::ReplicaOptions options;
  options.scheduler_endpoint = scheduler;
  options.feed.poll_interval = Millis(poll_ms);
  const auto start = Clock::now();
  running->replica = std::make_unique<ps::Replica>(std::move(options));
  RETURN_IF_ERROR(running->replica->Start());
  running->serving = std::thread([r = running->replica.get()] { r->Run(); });
  while (!running->replica->ready()) {
    if (Clock::now() - start > std::chrono::minutes(10)) {
      return DeadlineExceeded("the replica made no whole copy within 10 minutes");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  *copy_seconds = Seconds(Clock::now() - start);
  ps::ClientOptions reader;
  reader.scheduler_endpoint = running->replica->endpoint();
  reader.read_only = true;
  reader.request_timeout = kRequestTimeout;
  ASSIGN_OR_RETURN(running->reader, ps::Client::Connect(std::move(reader)));
  return running;
}

// What the benchmark keeps between rounds.
struct Bench {
  const ReplicaBenchOptions& options;
  std::unique_ptr<local::LocalCluster> cluster;
  std::unique_ptr<ps::Client> load, trainer;
  std::vector<std::unique_ptr<RequestDriver>> pull_drivers, push_drivers;
  std::vector<std::vector<KeyBatch>> batches;
  std::unique_ptr<Traffic> pull, push;
  uint64_t next_probe_key = kFirstProbeKey;
  std::vector<double> copy_seconds;
  uint64_t stream_bytes = 0, stream_rows = 0;
  double stream_seconds = 0;
};

Result<std::unique_ptr<ps::Client>> ConnectTo(const std::string& scheduler, const char* name) {
  ps::ClientOptions options;
  options.scheduler_endpoint = scheduler;
  options.name = name;
  options.request_timeout = kRequestTimeout;
  return ps::Client::Connect(std::move(options));
}

Status StartCluster(Bench& bench) {
  const ReplicaBenchOptions& o = bench.options;
  TableSpec table;
  table.name = kTable;
  table.dim = o.dim;
  table.seed = 1;
  ASSIGN_OR_RETURN(table.optimizer.kind, embedding::OptimizerKindFromName(o.optimizer));
  table.optimizer.learning_rate = 0.05f;
  RETURN_IF_ERROR(embedding::ValidateTableSpec(table));
  bench.cluster = std::make_unique<local::LocalCluster>(
      std::vector<TableSpec>{table},
      local::LocalClusterOptions{.num_servers = o.servers, .num_partitions = o.partitions});
  RETURN_IF_ERROR(bench.cluster->status());
  const std::string& scheduler = bench.cluster->scheduler_endpoint();
  ASSIGN_OR_RETURN(bench.load, ConnectTo(scheduler, "bench-load"));
  ASSIGN_OR_RETURN(bench.trainer, ConnectTo(scheduler, "bench-probe"));
  const BenchOptions load = LoadOptions(o);
  bench.pull_drivers.push_back(
      std::make_unique<EmberPullDriver>(bench.load.get(), kTable, o.keys_per_request, o.dim));
  bench.push_drivers.push_back(
      std::make_unique<EmberPushDriver>(bench.load.get(), kTable, o.keys_per_request, o.dim));
  RETURN_IF_ERROR(Populate(load, bench.pull_drivers).status());
  bench.batches.push_back(MakeKeyBatches(load, 0, 64));
  bench.pull = std::make_unique<Traffic>(MakeTraffic("pull", bench.pull_drivers, bench.batches));
  bench.push = std::make_unique<Traffic>(MakeTraffic("push", bench.push_drivers, bench.batches));
  RETURN_IF_ERROR(WarmUp(*bench.pull, o.seconds));
  return WarmUp(*bench.push, o.seconds);
}

// One side of a round: pull, then push, while the probe runs; with `reader`, it times lags.
Result<ReplicaBenchReport::Side> RunSide(Bench& bench, ps::Client* reader,
                                         std::vector<double>& lags, uint64_t& lost) {
  Probe probe(*bench.trainer, reader, bench.options.dim, bench.next_probe_key);
  std::atomic<bool> stop{false};
  std::thread probing(
      [&] { probe.Run(stop, std::chrono::milliseconds(bench.options.probe_ms)); });
  // The time ends a phase; the request count only bounds its loop.
  const PhaseLimits limits{.requests_per_client = kMaxRequestsPerPhase,
                           .seconds = bench.options.seconds};
  PhaseOutcome pulled = RunPhase(*bench.pull, limits);
  PhaseOutcome pushed = RunPhase(*bench.push, limits);
  stop = true;
  probing.join();
  bench.next_probe_key = probe.next_key();
  lags.insert(lags.end(), probe.lags_ms().begin(), probe.lags_ms().end());
  lost += probe.lost();
  RETURN_IF_ERROR(pulled.status);
  RETURN_IF_ERROR(pushed.status);
  return ReplicaBenchReport::Side{KeysPerSecond(pulled), KeysPerSecond(pushed)};
}

// The side with a replica: started (its copy timed), followed while the load runs, stopped.
Result<ReplicaBenchReport::Side> RunSideWithReplica(Bench& bench, ReplicaBenchReport& report) {
  double copy = 0;
  ASSIGN_OR_RETURN(auto running, StartReplica(bench.cluster->scheduler_endpoint(),
                                              bench.options.poll_ms, &copy));
  bench.copy_seconds.push_back(copy);
  const ps::FeedStats before = running->replica->feed_stats();
  const auto start = Clock::now();
  auto side = RunSide(bench, running->reader.get(), report.lag_ms, report.probes_lost);
  const ps::FeedStats after = running->replica->feed_stats();
  bench.stream_bytes += after.bytes - before.bytes;
  bench.stream_rows += after.rows - before.rows;
  bench.stream_seconds += Seconds(Clock::now() - start);
  return side;
}

void Summarize(const Bench& bench, ReplicaBenchReport& report) {
  std::vector<double> pull_ratios, push_ratios;
  for (size_t r = 0; r < report.with.size(); ++r) {
    const auto& with = report.with[r];
    const auto& without = report.without[r];
    if (without.pull_keys_per_second > 0) {
      pull_ratios.push_back(with.pull_keys_per_second / without.pull_keys_per_second);
    }
    if (without.push_keys_per_second > 0) {
      push_ratios.push_back(with.push_keys_per_second / without.push_keys_per_second);
    }
  }
  report.pull_ratio = Median(pull_ratios);
  report.push_ratio = Median(push_ratios);
  std::sort(report.lag_ms.begin(), report.lag_ms.end());
  report.lag_p50_ms = Percentile(report.lag_ms, 0.5);
  report.lag_p99_ms = Percentile(report.lag_ms, 0.99);
  report.lag_max_ms = report.lag_ms.empty() ? 0 : report.lag_ms.back();
  report.copy_seconds = Median(bench.copy_seconds);
  if (bench.stream_rows > 0) {
    report.stream_bytes_per_row = static_cast<double>(bench.stream_bytes) / bench.stream_rows;
  }
  if (bench.stream_seconds > 0) report.stream_rows_per_second = bench.stream_rows / bench.stream_seconds;
}

}  // namespace

Status CheckReplicaBenchOptions(const ReplicaBenchOptions& o) {
  if (o.servers == 0) return InvalidArgument("--servers must be at least 1");
  if (o.partitions < o.servers) return InvalidArgument("--partitions must be at least --servers");
  if (o.rounds == 0) return InvalidArgument("--rounds must be at least 1");
  if (!(o.seconds > 0)) return InvalidArgument("--seconds must be positive");
  if (o.dim == 0) return InvalidArgument("--dim must be at least 1");
  if (o.vocabulary < 2ull * o.keys_per_request) {
    return InvalidArgument("--vocabulary must be at least twice --keys-per-request");
  }
  return Status::Ok();
}

Result<ReplicaBenchReport> RunReplicaBench(
    const ReplicaBenchOptions& options, const std::function<void(const std::string&)>& progress) {
  RETURN_IF_ERROR(CheckReplicaBenchOptions(options));
  Bench bench{.options = options};
  RETURN_IF_ERROR(StartCluster(bench));
  ReplicaBenchReport report;
  std::vector<double> no_lags;
  uint64_t no_losses = 0;
  for (uint32_t round = 0; round < options.rounds; ++round) {
    // The side that goes first alternates, so that drift on the machine favours neither.
    for (int half = 0; half < 2; ++half) {
      const bool with_replica = (round + half) % 2 == 1;
      if (with_replica) {
        ASSIGN_OR_RETURN(ReplicaBenchReport::Side side, RunSideWithReplica(bench, report));
        report.with.push_back(side);
      } else {
        ASSIGN_OR_RETURN(ReplicaBenchReport::Side side,
                         RunSide(bench, nullptr, no_lags, no_losses));
        report.without.push_back(side);
      }
    }
    const auto& with = report.with.back();
    const auto& without = report.without.back();
    progress(StringPrintf("round %u: pull %.2fM keys/s without a replica, %.2fM with; push "
                          "%.2fM, %.2fM; %zu lag samples so far",
                          round + 1, without.pull_keys_per_second / 1e6,
                          with.pull_keys_per_second / 1e6, without.push_keys_per_second / 1e6,
                          with.push_keys_per_second / 1e6, report.lag_ms.size()));
  }
  Summarize(bench, report);
  return report;
}

std::string ReplicaBenchJson(const ReplicaBenchOptions& o, const ReplicaBenchReport& r) {
  nlohmann::json sides = nlohmann::json::array();
  for (size_t i = 0; i < r.with.size(); ++i) {
    sides.push_back({{"without", {{"pull_keys_per_second", r.without[i].pull_keys_per_second},
                                  {"push_keys_per_second", r.without[i].push_keys_per_second}}},
                     {"with", {{"pull_keys_per_second", r.with[i].pull_keys_per_second},
                               {"push_keys_per_second", r.with[i].push_keys_per_second}}}});
  }
  nlohmann::json out = {
      {"config", {{"servers", o.servers}, {"partitions", o.partitions}, {"dim", o.dim},
                  {"optimizer", o.optimizer}, {"vocabulary", o.vocabulary},
                  {"keys_per_request", o.keys_per_request}, {"seconds", o.seconds},
                  {"rounds", o.rounds}, {"poll_ms", o.poll_ms}, {"probe_ms", o.probe_ms}}},
      {"rounds", sides},
      {"pull_ratio", r.pull_ratio},
      {"push_ratio", r.push_ratio},
      {"lag_ms", {{"p50", r.lag_p50_ms}, {"p99", r.lag_p99_ms}, {"max", r.lag_max_ms},
                  {"samples", r.lag_ms.size()}, {"lost", r.probes_lost}}},
      {"copy_seconds", r.copy_seconds},
      {"stream_bytes_per_row", r.stream_bytes_per_row},
      {"stream_rows_per_second", r.stream_rows_per_second}};
  return out.dump(2) + "\n";
}

}  // namespace ember::bench
