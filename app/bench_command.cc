// `ember bench`: the data-plane benchmark. Drives pull and push traffic with Zipf-distributed keys
// from several client threads against a cluster (started in this process, or a running one), and
// right after each share of it the same traffic to bare ZeroMQ echo peers, in interleaved rounds,
// to show how close ember gets to the transport's own limit under the same load on the machine.
// Prints a table and optionally writes the figures as JSON.
#include <spdlog/spdlog.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <latch>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "app/bench_report.h"
#include "app/command_support.h"
#include "app/commands.h"
#include "app/local_cluster.h"
#include "app/process_setup.h"
#include "common/transport.h"
#include "embedding/embedding_table.h"
#include "embedding/optimizer.h"
#include "embedding/table_config.h"
#include "ps/client/client.h"
#include "ps/server/echo_peer.h"
#include "scheduler/scheduler.h"
#include "trainer/zipf.h"

namespace ember::app {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kWarmupRequests = 3;      // per client, before the clock starts
constexpr size_t kMaxBatchesPerClient = 64;  // distinct key batches a client cycles through
constexpr size_t kPushReplyBytes = 32;       // about the size of ember's status-only reply
constexpr Millis kRequestTimeout{60'000};
constexpr uint64_t kMaxRounds = 1000;

int Fail(const Status& status) {
  std::fprintf(stderr, "ember bench: %s\n", status.ToString().c_str());
  return 1;
}

// ---- CPU time and memory of this process ----

// CPU seconds a thread of this process has used. The kernel exposes every thread's CPU clock
// under a clock id derived from its thread id (the encoding pthread_getcpuclockid uses), which
// gives nanoseconds; /proc's utime + stime in clock ticks is the fallback.
double ThreadCpuSeconds(pid_t thread_id) {
  const auto clock_id = static_cast<clockid_t>((~static_cast<unsigned>(thread_id) << 3) |
                                               4u /*per thread*/ | 2u /*scheduler time*/);
  timespec time{};
  if (clock_gettime(clock_id, &time) == 0) return time.tv_sec + time.tv_nsec * 1e-9;
  std::ifstream stat("/proc/self/task/" + std::to_string(thread_id) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return 0;  // the thread has exited
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {  // fields 14 and 15 of the stat line
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double CpuSecondsOf(const std::vector<pid_t>& thread_ids) {
  double total = 0;
  for (pid_t id : thread_ids) total += ThreadCpuSeconds(id);
  return total;
}

uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size_pages = 0, resident_pages = 0;
  statm >> size_pages >> resident_pages;
  return resident_pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// ---- Traffic ----

using KeyBatch = std::vector<uint64_t>;

// Batches of `keys_per_request` distinct keys (push wants unique keys), drawn from the Zipf law.
// Once the hot head is exhausted the draws fall back to uniform ranks, so a batch always fills.
std::vector<KeyBatch> MakeKeyBatches(const BenchConfig& config, uint32_t client, size_t count) {
  const trainer::ZipfSampler sampler(config.vocabulary, config.exponent, true, config.seed);
  std::mt19937_64 rng(config.seed * 1'000'003 + client);
  std::vector<KeyBatch> batches(count);
  for (KeyBatch& batch : batches) {
    std::unordered_set<uint64_t> seen;
    seen.reserve(config.keys_per_request * 2);
    const uint64_t zipf_attempts = uint64_t{20} * config.keys_per_request;
    for (uint64_t attempt = 0; batch.size() < config.keys_per_request; ++attempt) {
      const uint64_t key = attempt < zipf_attempts
                               ? sampler(rng)
                               : sampler.KeyOfRank(trainer::UniformBelow(rng, config.vocabulary));
      if (seen.insert(key).second) batch.push_back(key);
    }
  }
  return batches;
}

// One client thread's way of making a request and waiting for its answer.
class RequestDriver {
 public:
  virtual ~RequestDriver() = default;
  virtual Status Request(std::span<const uint64_t> keys) = 0;
};

class EmberPullDriver : public RequestDriver {
 public:
  EmberPullDriver(ps::Client* client, std::string table, uint32_t keys, uint32_t dim)
      : client_(client), table_(std::move(table)), dim_(dim), rows_(size_t{keys} * dim) {}
  Status Request(std::span<const uint64_t> keys) override {
    return client_->Pull(table_, keys, std::span<float>(rows_).first(keys.size() * dim_)).Wait();
  }

 private:
  ps::Client* client_;
  std::string table_;
  uint32_t dim_;
  std::vector<float> rows_;
};

class EmberPushDriver : public RequestDriver {
 public:
  EmberPushDriver(ps::Client* client, std::string table, uint32_t keys, uint32_t dim)
      : client_(client), table_(std::move(table)), gradients_(size_t{keys} * dim, 1e-3f) {}
  Status Request(std::span<const uint64_t> keys) override {
    return client_->Push(table_, keys, gradients_, clock_++).Wait();
  }

 private:
  ps::Client* client_;
  std::string table_;
  std::vector<float> gradients_;
  uint64_t clock_ = 0;
};

// The same requests straight against a table in this process.
class TablePullDriver : public RequestDriver {
 public:
  TablePullDriver(embedding::EmbeddingTable* table, uint32_t keys)
      : table_(table), rows_(size_t{keys} * table->dim()) {}
  Status Request(std::span<const uint64_t> keys) override {
    return table_->Pull(keys, std::span<float>(rows_).first(keys.size() * table_->dim()));
  }

 private:
  embedding::EmbeddingTable* table_;
  std::vector<float> rows_;
};

class TablePushDriver : public RequestDriver {
 public:
  TablePushDriver(embedding::EmbeddingTable* table, uint32_t keys)
      : table_(table), gradients_(size_t{keys} * table->dim(), 1e-3f) {}
  Status Request(std::span<const uint64_t> keys) override {
    return table_->Push(keys,
                        std::span<const float>(gradients_).first(keys.size() * table_->dim()));
  }

 private:
  embedding::EmbeddingTable* table_;
  std::vector<float> gradients_;
};

// Where the share of `part` of `parts` of `total` items starts: shares differ by at most one.
uint64_t ShareStart(uint64_t total, uint64_t part, uint64_t parts) {
  return total / parts * part + std::min(part, total % parts);
}

// The share of a request's keys that goes to peer `peer` of `peers`.
size_t ShareOf(size_t keys, size_t peer, size_t peers) {
  return ShareStart(keys, peer + 1, peers) - ShareStart(keys, peer, peers);
}

// Sends each request to every echo peer at once (a share of the keys each, as a client splits a
// batch over servers) from DEALER sockets set up like the client's, and waits for all replies.
class EchoDriver : public RequestDriver {
 public:
  enum class Mode { kPull, kPush };

  EchoDriver(Mode mode, uint32_t keys, uint32_t dim, std::vector<size_t> reply_bytes)
      : mode_(mode),
        dim_(dim),
        reply_bytes_(std::move(reply_bytes)),
        context_(1),
        gradients_(mode == Mode::kPush ? size_t{keys} * dim : 0, 1e-3f) {}

  Status Connect(const std::vector<std::string>& endpoints) {
    for (const std::string& endpoint : endpoints) {
      ASSIGN_OR_RETURN(Socket socket, MakeSocket(context_, SocketKind::kDealer));
      RETURN_IF_ERROR(ConnectSocket(socket, endpoint));
      sockets_.push_back(std::move(socket));
    }
    return Status::Ok();
  }

  Status Request(std::span<const uint64_t> keys) override {
    const size_t row_bytes = mode_ == Mode::kPush ? size_t{dim_} * sizeof(float) : 0;
    size_t first = 0;
    for (size_t peer = 0; peer < sockets_.size(); ++peer) {
      const size_t share = ShareOf(keys.size(), peer, sockets_.size());
      std::vector<Frame> request;
      request.emplace_back(share * (sizeof(uint64_t) + row_bytes));
      char* out = static_cast<char*>(request.back().data());
      std::memcpy(out, keys.data() + first, share * sizeof(uint64_t));
      if (row_bytes > 0) {
        std::memcpy(out + share * sizeof(uint64_t), gradients_.data() + first * dim_,
                    share * row_bytes);
      }
      first += share;
      RETURN_IF_ERROR(SendFrames(sockets_[peer], request));
    }
    for (size_t peer = 0; peer < sockets_.size(); ++peer) {
      ASSIGN_OR_RETURN(auto reply, ReceiveFrames(sockets_[peer], kRequestTimeout));
      if (reply.size() != 1 || reply.front().size() != reply_bytes_[peer]) {
        return Internal("echo peer answered with an unexpected reply");
      }
    }
    return Status::Ok();
  }

 private:
  const Mode mode_;
  const uint32_t dim_;
  const std::vector<size_t> reply_bytes_;
  Context context_;
  std::vector<Socket> sockets_;
  std::vector<float> gradients_;
};

// What one side of an operation (ember, raw ZeroMQ, or the lookups alone) sends: a driver per
// client thread, that client's key batches, and the batch each client sends next, kept across
// rounds so that later rounds go on through the batches.
struct Traffic {
  std::string name;  // says which side failed: "pull", "raw push", ...
  std::vector<RequestDriver*> drivers;
  const std::vector<std::vector<KeyBatch>>* batches = nullptr;
  std::vector<size_t> next_batch;
};

Traffic MakeTraffic(std::string name, const std::vector<std::unique_ptr<RequestDriver>>& drivers,
                    const std::vector<std::vector<KeyBatch>>& batches) {
  Traffic traffic{.name = std::move(name), .batches = &batches};
  for (const auto& driver : drivers) traffic.drivers.push_back(driver.get());
  traffic.next_batch.assign(drivers.size(), 0);
  return traffic;
}

// How much one phase may send: requests per client thread, and a time limit for all of them.
struct PhaseLimits {
  uint64_t requests_per_client = 0;
  double seconds = 0;
};

struct PhaseOutcome {
  Status status;
  uint64_t requests = 0;
  uint64_t keys = 0;
  double seconds = 0;
  std::vector<double> latencies_ms;
};

// Runs one client thread per driver, all starting together, each sending requests until it has
// sent limits.requests_per_client or limits.seconds have passed; one request in flight per thread.
PhaseOutcome RunPhase(Traffic& traffic, const PhaseLimits& limits) {
  const size_t threads = traffic.drivers.size();
  std::latch ready(static_cast<std::ptrdiff_t>(threads));
  std::latch go(1);
  Clock::time_point deadline;
  std::vector<Status> statuses(threads);
  std::vector<uint64_t> requests_done(threads, 0);
  std::vector<uint64_t> keys_done(threads, 0);
  std::vector<std::vector<double>> latencies(threads);
  std::vector<std::thread> workers;
  for (size_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const std::vector<KeyBatch>& mine = (*traffic.batches)[t];
      size_t& next = traffic.next_batch[t];
      latencies[t].reserve(limits.requests_per_client);
      ready.count_down();
      go.wait();
      while (statuses[t].ok() && requests_done[t] < limits.requests_per_client &&
             Clock::now() < deadline) {
        const KeyBatch& keys = mine[next++ % mine.size()];
        const auto start = Clock::now();
        statuses[t] = traffic.drivers[t]->Request(keys);
        latencies[t].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - start).count());
        ++requests_done[t];
        keys_done[t] += keys.size();
      }
    });
  }
  ready.wait();
  const auto start = Clock::now();
  deadline = start + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(limits.seconds));
  go.count_down();
  for (auto& worker : workers) worker.join();
  PhaseOutcome outcome;
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (size_t t = 0; t < threads; ++t) {
    if (!statuses[t].ok() && outcome.status.ok()) {
      outcome.status = statuses[t].WithContext(traffic.name);
    }
    outcome.requests += requests_done[t];
    outcome.keys += keys_done[t];
    outcome.latencies_ms.insert(outcome.latencies_ms.end(), latencies[t].begin(),
                                latencies[t].end());
  }
  return outcome;
}

// Sends kWarmupRequests per client thread, untimed, so that connections and buffers are set up
// before the clock starts.
Status WarmUp(Traffic& traffic, double seconds) {
  return RunPhase(traffic, {.requests_per_client = kWarmupRequests, .seconds = seconds}).status;
}

double KeysPerSecond(const PhaseOutcome& phase) {
  return phase.seconds > 0 ? phase.keys / phase.seconds : 0;
}

double Percentile(std::vector<double> sorted_values, double quantile) {
  if (sorted_values.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(quantile * sorted_values.size()));
  return sorted_values[std::clamp<size_t>(rank, 1, sorted_values.size()) - 1];
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

// ---- Rounds ----

// What round `round` of config.rounds may send of each operation, on each side: an even share of
// the requests per client and of the time limit.
PhaseLimits RoundLimits(const BenchConfig& config, uint32_t round) {
  return {.requests_per_client = ShareStart(config.requests, round + 1, config.rounds) -
                                 ShareStart(config.requests, round, config.rounds),
          .seconds = config.seconds / config.rounds};
}

// One operation (pull or push) measured round by round against ember and against the echo
// peers under the same traffic, with what the rounds have timed so far.
struct OperationRounds {
  Traffic ember;
  Traffic raw;
  PhaseOutcome ember_total;  // all rounds together
  PhaseOutcome raw_total;
  double server_cpu_seconds = 0;  // over ember's share of the rounds; in-process cluster only
  std::vector<double> ratios;     // ember keys/s over raw keys/s, per round
};

// Runs one side's share of a round and adds it to that side's total.
Result<PhaseOutcome> RunRoundSide(Traffic& traffic, const PhaseLimits& limits,
                                  PhaseOutcome* total) {
  PhaseOutcome round = RunPhase(traffic, limits);
  RETURN_IF_ERROR(round.status);
  total->requests += round.requests;
  total->keys += round.keys;
  total->seconds += round.seconds;
  total->latencies_ms.insert(total->latencies_ms.end(), round.latencies_ms.begin(),
                             round.latencies_ms.end());
  return round;
}

// Round `round` of one operation: ember's share, then the same share to the echo peers right
// after, and their ratio. With the cluster in this process, adds its server threads' CPU time
// over ember's share.
Status RunOperationRound(const BenchConfig& config, uint32_t round, const LocalCluster* cluster,
                         OperationRounds* op) {
  const PhaseLimits limits = RoundLimits(config, round);
  const double cpu_before = cluster ? CpuSecondsOf(cluster->server_thread_ids()) : 0;
  ASSIGN_OR_RETURN(PhaseOutcome ember, RunRoundSide(op->ember, limits, &op->ember_total));
  if (cluster) op->server_cpu_seconds += CpuSecondsOf(cluster->server_thread_ids()) - cpu_before;
  ASSIGN_OR_RETURN(PhaseOutcome raw, RunRoundSide(op->raw, limits, &op->raw_total));
  const double raw_keys_per_second = KeysPerSecond(raw);
  op->ratios.push_back(raw_keys_per_second > 0 ? KeysPerSecond(ember) / raw_keys_per_second : 0);
  return Status::Ok();
}

// Warms every side up once, then runs config.rounds rounds of ember pull, raw pull, ember push,
// raw push, so that each ratio compares two halves that saw the same load on the machine.
Status RunRounds(const BenchConfig& config, const LocalCluster* cluster, OperationRounds* pull,
                 OperationRounds* push) {
  for (OperationRounds* op : {pull, push}) {
    RETURN_IF_ERROR(WarmUp(op->ember, config.seconds));
    RETURN_IF_ERROR(WarmUp(op->raw, config.seconds));
  }
  for (uint32_t round = 0; round < config.rounds; ++round) {
    for (OperationRounds* op : {pull, push}) {
      RETURN_IF_ERROR(RunOperationRound(config, round, cluster, op));
    }
  }
  return Status::Ok();
}

// Payload of one key: its row (pull) or gradient (push), plus the key itself.
double PayloadBytesPerKey(uint32_t dim) { return dim * sizeof(float) + sizeof(uint64_t); }

// The figures of one operation from its rounds: rates and latencies over all rounds together,
// and the median of the rounds' ratios. `cpu_known`: the cluster ran in this process.
void FillOperation(const OperationRounds& rounds, uint32_t dim, bool cpu_known,
                   OperationFigures* op) {
  const PhaseOutcome& ember = rounds.ember_total;
  op->requests = ember.requests;
  op->keys = ember.keys;
  op->seconds = ember.seconds;
  op->keys_per_second = KeysPerSecond(ember);
  op->gb_per_second = op->keys_per_second * PayloadBytesPerKey(dim) / 1e9;
  std::vector<double> sorted = ember.latencies_ms;
  std::sort(sorted.begin(), sorted.end());
  op->latency_p50_ms = Percentile(sorted, 0.50);
  op->latency_p99_ms = Percentile(sorted, 0.99);
  op->latency_p999_ms = Percentile(sorted, 0.999);
  if (cpu_known && ember.keys > 0) {
    op->server_cpu_seconds_per_million_keys = rounds.server_cpu_seconds / (ember.keys / 1e6);
  }
  op->raw_keys_per_second = KeysPerSecond(rounds.raw_total);
  op->raw_gb_per_second = op->raw_keys_per_second * PayloadBytesPerKey(dim) / 1e9;
  op->ratio_rounds = rounds.ratios;
  op->ratio_to_raw = Median(rounds.ratios);
}

// Echo peers that answer one operation as the servers would (one per server, no table behind
// them), and one EchoDriver per client connected to all of them.
struct EchoTraffic {
  std::vector<std::unique_ptr<ps::EchoPeer>> peers;
  std::vector<std::unique_ptr<RequestDriver>> drivers;  // declared last: closed before the peers
};

Result<EchoTraffic> StartEchoTraffic(const BenchConfig& config, EchoDriver::Mode mode) {
  EchoTraffic echo;
  std::vector<std::string> endpoints;
  std::vector<size_t> reply_bytes;
  for (uint32_t i = 0; i < config.servers; ++i) {
    const size_t share = ShareOf(config.keys_per_request, i, config.servers);
    reply_bytes.push_back(mode == EchoDriver::Mode::kPull ? share * config.dim * sizeof(float)
                                                          : kPushReplyBytes);
    echo.peers.push_back(std::make_unique<ps::EchoPeer>(
        ps::EchoPeerOptions{.bind = "tcp://127.0.0.1:*", .reply_bytes = reply_bytes.back()}));
    RETURN_IF_ERROR(echo.peers.back()->Start().WithContext("starting an echo peer"));
    endpoints.push_back(echo.peers.back()->endpoint());
  }
  for (uint32_t c = 0; c < config.clients; ++c) {
    auto driver =
        std::make_unique<EchoDriver>(mode, config.keys_per_request, config.dim, reply_bytes);
    RETURN_IF_ERROR(driver->Connect(endpoints));
    echo.drivers.push_back(std::move(driver));
  }
  return echo;
}

// ---- Flags ----

Result<double> ParseNumberFlag(const Flags& flags, const std::string& name, double fallback) {
  if (!flags.Has(name)) return fallback;
  const std::string text = flags.Get(name);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value)) {
    return InvalidArgument("--" + name + " must be a number, got '" + text + "'");
  }
  return value;
}

Status ReadUintFlag(const Flags& flags, const std::string& name, uint64_t max, uint64_t* target) {
  ASSIGN_OR_RETURN(std::optional<uint64_t> value, flags.GetUint(name));
  if (!value) return Status::Ok();
  if (*value > max) {
    return InvalidArgument("--" + name + " must be at most " + std::to_string(max));
  }
  *target = *value;
  return Status::Ok();
}

Result<BenchConfig> ConfigFromFlags(const Flags& flags) {
  BenchConfig config;
  uint64_t servers = config.servers, server_threads = config.server_threads,
           clients = config.clients, keys = config.keys_per_request, dim = config.dim,
           requests = config.requests;
  RETURN_IF_ERROR(ReadUintFlag(flags, "servers", 256, &servers));
  server_threads = ps::DefaultWorkerThreads(static_cast<uint32_t>(std::max<uint64_t>(servers, 1)));
  RETURN_IF_ERROR(ReadUintFlag(flags, "server-threads", 256, &server_threads));
  RETURN_IF_ERROR(ReadUintFlag(flags, "clients", 256, &clients));
  RETURN_IF_ERROR(ReadUintFlag(flags, "keys-per-request", 2'000'000, &keys));
  uint64_t max_keys_per_message = config.max_keys_per_message;
  RETURN_IF_ERROR(ReadUintFlag(flags, "max-keys-per-message", 2'000'000, &max_keys_per_message));
  config.max_keys_per_message = static_cast<uint32_t>(max_keys_per_message);
  RETURN_IF_ERROR(ReadUintFlag(flags, "dim", embedding::kMaxTableDim, &dim));
  RETURN_IF_ERROR(ReadUintFlag(flags, "requests", 100'000'000, &requests));
  // The default never asks for more rounds than there are requests; an explicit --rounds must not.
  uint64_t rounds = std::min<uint64_t>(config.rounds, requests);
  RETURN_IF_ERROR(ReadUintFlag(flags, "rounds", kMaxRounds, &rounds));
  RETURN_IF_ERROR(ReadUintFlag(flags, "vocabulary", uint64_t{1} << 62, &config.vocabulary));
  config.populate = config.vocabulary;
  RETURN_IF_ERROR(ReadUintFlag(flags, "populate", config.vocabulary, &config.populate));
  RETURN_IF_ERROR(ReadUintFlag(flags, "seed", ~uint64_t{0}, &config.seed));
  ASSIGN_OR_RETURN(config.exponent, ParseNumberFlag(flags, "exponent", config.exponent));
  ASSIGN_OR_RETURN(config.seconds, ParseNumberFlag(flags, "seconds", config.seconds));
  config.servers = static_cast<uint32_t>(servers);
  config.server_threads = static_cast<uint32_t>(server_threads);
  config.clients = static_cast<uint32_t>(clients);
  config.keys_per_request = static_cast<uint32_t>(keys);
  config.dim = static_cast<uint32_t>(dim);
  config.requests = static_cast<uint32_t>(requests);
  config.rounds = static_cast<uint32_t>(rounds);
  config.optimizer = flags.Get("optimizer", config.optimizer);
  config.scheduler = flags.Get("scheduler");
  config.table = flags.Get("table", config.table);
  for (const auto& [name, value] :
       {std::pair{"servers", servers}, std::pair{"server-threads", server_threads},
        std::pair{"clients", clients}, std::pair{"keys-per-request", keys}, std::pair{"dim", dim},
        std::pair{"requests", requests}, std::pair{"rounds", rounds},
        std::pair{"max-keys-per-message", max_keys_per_message}}) {
    if (value == 0) return InvalidArgument(std::string("--") + name + " must be at least 1");
  }
  if (rounds > requests) {
    return InvalidArgument("--rounds must be at most --requests (" + std::to_string(requests) +
                           "): each round times at least one request per client");
  }
  if (config.exponent < 0) return InvalidArgument("--exponent must be >= 0");
  if (config.seconds <= 0) return InvalidArgument("--seconds must be > 0");
  if (config.vocabulary < uint64_t{4} * config.keys_per_request) {
    return InvalidArgument(
        "--vocabulary must be at least 4x --keys-per-request (each request "
        "holds distinct keys)");
  }
  if (flags.Has("table") && config.scheduler.empty()) {
    return InvalidArgument("--table needs --scheduler (an in-process cluster has table 'bench')");
  }
  if (config.scheduler.find('*') != std::string::npos) {
    return InvalidArgument("--scheduler must be a concrete endpoint, got '" + config.scheduler +
                           "'");
  }
  ASSIGN_OR_RETURN(OptimizerKind kind, embedding::OptimizerKindFromName(config.optimizer));
  (void)kind;
  return config;
}

Result<TableSpec> BenchTable(const BenchConfig& config) {
  TableSpec table;
  table.name = config.table;
  table.dim = config.dim;
  table.seed = config.seed;
  ASSIGN_OR_RETURN(table.optimizer.kind, embedding::OptimizerKindFromName(config.optimizer));
  table.optimizer.learning_rate = static_cast<float>(config.learning_rate);
  RETURN_IF_ERROR(embedding::ValidateTableSpec(table));
  return table;
}

// Creates the rows of the config.populate most popular keys by pulling them, the drivers in
// parallel, each a contiguous range of ranks in requests of config.keys_per_request keys.
Result<PopulateFigures> Populate(const BenchConfig& config,
                                 std::vector<std::unique_ptr<RequestDriver>>& pull_drivers) {
  const trainer::ZipfSampler sampler(config.vocabulary, config.exponent, true, config.seed);
  const auto start = Clock::now();
  std::vector<Status> statuses(pull_drivers.size());
  std::vector<std::thread> threads;
  for (size_t d = 0; d < pull_drivers.size(); ++d) {
    threads.emplace_back([&, d] {
      const uint64_t end = ShareStart(config.populate, d + 1, pull_drivers.size());
      KeyBatch keys;
      for (uint64_t rank = ShareStart(config.populate, d, pull_drivers.size());
           rank < end && statuses[d].ok(); rank += keys.size()) {
        keys.clear();
        for (uint64_t i = rank; i < std::min<uint64_t>(end, rank + config.keys_per_request); ++i) {
          keys.push_back(sampler.KeyOfRank(i));
        }
        statuses[d] = pull_drivers[d]->Request(keys);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const Status& status : statuses) RETURN_IF_ERROR(status.WithContext("populating"));
  PopulateFigures figures;
  figures.rows = config.populate;
  figures.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  figures.rows_per_second = figures.seconds > 0 ? figures.rows / figures.seconds : 0;
  return figures;
}

// Runs the first client's requests straight against an EmbeddingTable holding the same rows as
// the cluster (the populated keys, in as many partitions), on one thread: the lookup limit.
Status RunLookupPhases(const BenchConfig& config, const std::vector<KeyBatch>& batches,
                       BenchReport* report) {
  ASSIGN_OR_RETURN(TableSpec spec, BenchTable(config));
  embedding::EmbeddingTable table(spec, scheduler::SchedulerOptions().num_partitions);
  std::vector<std::unique_ptr<RequestDriver>> pull, push;
  pull.push_back(std::make_unique<TablePullDriver>(&table, config.keys_per_request));
  push.push_back(std::make_unique<TablePushDriver>(&table, config.keys_per_request));
  RETURN_IF_ERROR(Populate(config, pull).status().WithContext("the lookup table"));
  const std::vector<std::vector<KeyBatch>> first_client_batches = {batches};
  for (auto [drivers, figures] :
       {std::pair{&pull, &report->pull}, std::pair{&push, &report->push}}) {
    Traffic traffic = MakeTraffic("lookups alone", *drivers, first_client_batches);
    RETURN_IF_ERROR(WarmUp(traffic, config.seconds));
    PhaseOutcome phase =
        RunPhase(traffic, {.requests_per_client = config.requests, .seconds = config.seconds});
    RETURN_IF_ERROR(phase.status);
    figures->lookup_keys_per_second = KeysPerSecond(phase);
  }
  return Status::Ok();
}

// The memory figures: rows and bytes per row by the servers' account, the raw bytes of a row and
// its optimizer state, and, when known, the growth of resident memory per row.
Status FillMemory(const BenchConfig& config, ps::Client& client,
                  std::optional<double> resident_growth, MemoryFigures* memory) {
  ASSIGN_OR_RETURN(std::vector<wire::ServerStats> stats, client.Stats());
  uint64_t table_bytes = 0;
  for (const wire::ServerStats& server : stats) {
    for (const wire::TableStats& table : server.tables) {
      if (table.name != config.table) continue;
      memory->rows += table.rows;
      table_bytes += table.bytes;
    }
  }
  if (memory->rows > 0) {
    memory->bytes_per_row = static_cast<double>(table_bytes) / memory->rows;
    if (resident_growth) memory->rss_bytes_per_row = *resident_growth / memory->rows;
  }
  ASSIGN_OR_RETURN(const TableSpec* table, client.FindTable(config.table));
  ASSIGN_OR_RETURN(embedding::RowOptimizer optimizer,
                   embedding::RowOptimizer::Create(table->optimizer, table->dim));
  memory->raw_bytes_per_row = (table->dim + optimizer.state_floats()) * sizeof(float);
  return Status::Ok();
}

// Everything but the lookups alone: starts the cluster (unless --scheduler names one), the
// clients and the echo peers, creates the rows, runs the rounds and fills the report.
Status RunClusterRounds(BenchConfig& config, const std::vector<std::vector<KeyBatch>>& batches,
                        BenchReport* report) {
  std::unique_ptr<LocalCluster> cluster;
  std::string scheduler_endpoint = config.scheduler;
  if (scheduler_endpoint.empty()) {
    ASSIGN_OR_RETURN(TableSpec table, BenchTable(config));
    cluster = std::make_unique<LocalCluster>(
        std::vector<TableSpec>{table},
        LocalClusterOptions{.num_servers = config.servers,
                            .num_partitions = scheduler::SchedulerOptions().num_partitions,
                            .worker_threads = config.server_threads});
    RETURN_IF_ERROR(cluster->status());
    scheduler_endpoint = cluster->scheduler_endpoint();
  }

  std::vector<std::unique_ptr<ps::Client>> clients;
  for (uint32_t c = 0; c < config.clients; ++c) {
    ps::ClientOptions options;
    options.scheduler_endpoint = scheduler_endpoint;
    options.name = "bench-" + std::to_string(getpid()) + "-" + std::to_string(c);
    options.request_timeout = kRequestTimeout;
    options.max_keys_per_message = config.max_keys_per_message;
    ASSIGN_OR_RETURN(auto client, ps::Client::Connect(std::move(options)));
    clients.push_back(std::move(client));
  }
  if (!cluster) {
    // A running cluster decides the row width and the server count; the thread count is unknown.
    ASSIGN_OR_RETURN(const TableSpec* table, clients.front()->FindTable(config.table));
    config.dim = table->dim;
    config.optimizer = embedding::OptimizerKindName(table->optimizer.kind);
    config.learning_rate = table->optimizer.learning_rate;
    config.servers = static_cast<uint32_t>(clients.front()->routing().servers.size());
    config.server_threads = 0;
  }
  report->config = config;

  std::vector<std::unique_ptr<RequestDriver>> pull_drivers, push_drivers;
  for (auto& client : clients) {
    pull_drivers.push_back(std::make_unique<EmberPullDriver>(client.get(), config.table,
                                                             config.keys_per_request, config.dim));
    push_drivers.push_back(std::make_unique<EmberPushDriver>(client.get(), config.table,
                                                             config.keys_per_request, config.dim));
  }
  // The transport limit: echo peers in this process for the whole run, idle while ember runs
  // (as the cluster is while they answer), started before resident memory is first measured.
  ASSIGN_OR_RETURN(EchoTraffic echo_pull, StartEchoTraffic(config, EchoDriver::Mode::kPull));
  ASSIGN_OR_RETURN(EchoTraffic echo_push, StartEchoTraffic(config, EchoDriver::Mode::kPush));
  const uint64_t resident_before = ResidentBytes();
  ASSIGN_OR_RETURN(report->populate, Populate(config, pull_drivers));
  OperationRounds pull{.ember = MakeTraffic("pull", pull_drivers, batches),
                       .raw = MakeTraffic("raw pull (echo traffic)", echo_pull.drivers, batches)};
  OperationRounds push{.ember = MakeTraffic("push", push_drivers, batches),
                       .raw = MakeTraffic("raw push (echo traffic)", echo_push.drivers, batches)};
  RETURN_IF_ERROR(RunRounds(config, cluster.get(), &pull, &push));
  const uint64_t resident_after = ResidentBytes();
  FillOperation(pull, config.dim, cluster != nullptr, &report->pull);
  FillOperation(push, config.dim, cluster != nullptr, &report->push);

  std::optional<double> resident_growth;
  if (cluster) {
    resident_growth = resident_after > resident_before
                          ? static_cast<double>(resident_after - resident_before)
                          : 0.0;
  }
  return FillMemory(config, *clients.front(), resident_growth, &report->memory);
}

Status RunBench(BenchConfig& config, BenchReport* report) {
  const size_t batches_per_client =
      std::min<size_t>(kMaxBatchesPerClient, size_t{config.requests} + kWarmupRequests);
  std::vector<std::vector<KeyBatch>> batches;
  for (uint32_t c = 0; c < config.clients; ++c) {
    batches.push_back(MakeKeyBatches(config, c, batches_per_client));
  }
  RETURN_IF_ERROR(RunClusterRounds(config, batches, report));
  // The lookups alone, with the cluster and the echo peers gone so they do not share the machine.
  if (config.scheduler.empty()) RETURN_IF_ERROR(RunLookupPhases(config, batches.front(), report));
  return Status::Ok();
}

}  // namespace

int BenchCommand(int argc, char** argv) {
  const std::vector<FlagSpec> known = {
      {"servers", "N", "servers of the in-process cluster (default 1)"},
      {"server-threads", "N",
       "worker threads per server (default: the cores less one per server, at least 1)"},
      {"clients", "N", "client threads, each with its own connection (default 1)"},
      {"keys-per-request", "K", "distinct keys per pull or push (default 16384)"},
      {"max-keys-per-message", "K",
       "a server's share of a request goes in messages of at most K keys (default 4096)"},
      {"dim", "N", "row width of the benchmark table (default 64)"},
      {"optimizer", "KIND", "sgd, adagrad, adam or ftrl, learning rate 0.05 (default adagrad)"},
      {"exponent", "X", "Zipf exponent of key popularity (default 1.05)"},
      {"vocabulary", "N", "number of distinct keys (default 10000000)"},
      {"populate", "N",
       "rows created before timing, the N most popular keys (default: the whole vocabulary)"},
      {"seed", "N", "seed of the key draws and the table (default 1)"},
      {"requests", "N", "timed requests per client per operation, over all rounds (default 200)"},
      {"seconds", "S",
       "time limit per operation over all rounds, for ember and raw ZeroMQ each (default 30)"},
      {"rounds", "R",
       "split the requests and the time limit into R rounds of ember pull, raw pull, ember push, "
       "raw push; 'vs raw' is the median of the rounds' ratios (default 5, at most --requests)"},
      {"scheduler", "ENDPOINT", "benchmark a running cluster instead of an in-process one"},
      {"table", "NAME", "table to use on a running cluster (default bench)"},
      {"json", "FILE", "also write every figure as JSON"},
  };
  int exit_code = 0;
  auto flags = ParseCommandFlags(
      argc, argv, "ember bench [options]",
      "Measures the data plane: pull and push throughput, latency, server CPU and memory per "
      "row, against a cluster started in this process (or --scheduler), and the same traffic "
      "against bare ZeroMQ echo peers for comparison, the two alternating in --rounds rounds so "
      "that both see the same load. Always bounded by --requests and --seconds.",
      known, &exit_code);
  if (!flags) return exit_code;
  SetUpLogging("bench");
  // The in-process cluster's start-up lines would interleave with the table.
  if (std::getenv("EMBER_LOG_LEVEL") == nullptr) spdlog::set_level(spdlog::level::warn);
  auto config = ConfigFromFlags(*flags);
  if (!config.ok()) {
    std::fprintf(stderr, "ember bench: %s\n", config.status().ToString().c_str());
    return 2;
  }
  BenchReport report;
  Status ran = RunBench(*config, &report);
  if (!ran.ok()) return Fail(ran);
  std::fputs(FormatBenchTable(report).c_str(), stdout);
  std::fflush(stdout);
  if (flags->Has("json")) {
    Status written = WriteFileAtomically(flags->Get("json"), BenchReportJson(report));
    if (!written.ok()) return Fail(written);
  }
  return 0;
}

}  // namespace ember::app
