// Server implementation: registration, the ROUTER->workers forwarding loop (with one worker, the
// data plane served on the ROUTER's thread) and the workers.
#include "ps/server/server.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "common/advertised_endpoint.h"
#include "common/file_io.h"
#include "common/thread_name.h"
#include "common/usable_cores.h"
#include "common/wire.h"
#include "embedding/cold_row_file.h"
#include "embedding/embedding_table.h"
#include "embedding/table_config.h"

namespace ember::ps {
namespace {

constexpr Millis kPollInterval{100};

// How often the forwarding loop retries a request no worker had room for.
constexpr Millis kRetryInterval{1};

// A request goes to the workers as [peer] [identity] [delimiter?] payload: ZeroMQ's metadata
// does not cross the inproc hop, so the router thread hands the authenticated peer on in a frame
// of its own (its role, then its public key).
Frame PeerFrame(const Peer& peer) {
  std::string bytes(1, static_cast<char>(peer.role));
  bytes += peer.public_key;
  return Frame(bytes);
}

PeerRole RoleInFrame(const Frame& frame) {
  if (frame.size() == 0) return PeerRole::kInsecure;
  return static_cast<PeerRole>(static_cast<const char*>(frame.data())[0]);
}

Peer PeerFromFrame(const Frame& frame) {
  if (frame.size() == 0) return Peer{PeerRole::kInsecure, ""};
  const auto* bytes = static_cast<const char*>(frame.data());
  return Peer{RoleInFrame(frame), std::string(bytes + 1, frame.size() - 1)};
}

// Whether a request (as the workers get it) comes from a reader key: the readers' worker serves
// it.
bool FromReader(const std::vector<Frame>& request) {
  return RoleInFrame(request.front()) == PeerRole::kReader;
}

// The readers' worker's queue.
constexpr const char* kReadersEndpoint = "inproc://ember-server-readers";

// The calling thread runs at the lowest CPU priority (nice 19: Linux sets it per thread), or as
// it was where it may not.
void LowestThreadPriority() {
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19) != 0) {
    spdlog::debug("server: the readers' worker keeps its priority: setpriority failed");
  }
}

// The next request from the frontend, as the workers get it: the peer frame, then its frames.
std::vector<Frame> ReceiveRequest(Socket& frontend) {
  auto message = ReceiveMessage(frontend, Millis(0));
  if (!message.ok() || message->frames.empty()) return {};
  std::vector<Frame> frames;
  frames.reserve(message->frames.size() + 1);
  frames.push_back(PeerFrame(message->peer));
  for (Frame& frame : message->frames) frames.push_back(std::move(frame));
  return frames;
}

// Files in the data directory.
constexpr const char* kIdentityFile = "server-identity";  // "<id> <endpoint>\n"
constexpr uint64_t kMaxIdentityFileBytes = 4096;          // a larger one is not read

// The id and endpoint recorded in a data directory's identity file; nullopt when there is none
// (or it is unreadable: the server then records its own).
std::optional<std::pair<uint32_t, std::string>> ReadIdentityFile(const std::string& data_dir) {
  auto text = ReadWholeFile((std::filesystem::path(data_dir) / kIdentityFile).string(),
                            kMaxIdentityFileBytes);
  if (!text.ok()) return std::nullopt;
  std::istringstream in(*text);
  uint32_t id = 0;
  std::string endpoint;
  if (!(in >> id >> endpoint)) return std::nullopt;
  return std::pair{id, endpoint};
}
constexpr const char* kRowsDir = "rows";  // the RocksDB instance
// Look-ahead may pin a quarter of the memory budget: eviction always has the rest to choose from.
constexpr uint64_t kPinShareOfBudget = 4;

}  // namespace

uint32_t DefaultWorkerThreads(uint32_t servers_on_machine) {
  const uint32_t cores = UsableCores();
  const uint32_t per_server = cores / std::max(1u, servers_on_machine);
  return per_server > 1 ? per_server - 1 : 1;
}

Server::Server(ServerOptions options)
    : options_(std::move(options)), context_(1, options_.security) {
  if (options_.worker_threads == 0) options_.worker_threads = DefaultWorkerThreads();
  context_.set_queue_limit(static_cast<int>(options_.policy.limits.socket_queue));
}

Server::~Server() { Shutdown(); }

Status Server::Start() {
  if (options_.memory_budget_bytes != 0 && options_.data_dir.empty()) {
    return InvalidArgument("server: a memory budget needs a data directory for the rows beyond it");
  }
  ASSIGN_OR_RETURN(frontend_, MakeSocket(context_, SocketKind::kRouter));
  const std::string recorded = RecordedEndpoint();
  const std::string bind = recorded.empty() ? options_.bind : recorded;
  auto bound = BindSocket(frontend_, bind);
  if (!bound.ok()) {
    return bound.status().WithContext(recorded.empty() ? "binding the data socket"
                                                       : "binding the endpoint recorded in '" +
                                                             options_.data_dir + "'");
  }
  bound_endpoint_ = *bound;
  ASSIGN_OR_RETURN(endpoint_, AdvertisedEndpoint(bound_endpoint_, options_.advertise));
  ASSIGN_OR_RETURN(backend_, MakeSocket(context_, SocketKind::kDealer));
  backend_endpoint_ = "inproc://ember-server-workers";
  ASSIGN_OR_RETURN(std::string bound_backend, BindSocket(backend_, backend_endpoint_));
  (void)bound_backend;
  ASSIGN_OR_RETURN(readers_backend_, MakeSocket(context_, SocketKind::kDealer));
  RETURN_IF_ERROR(BindSocket(readers_backend_, kReadersEndpoint).status());
  // The workers' sockets connect before registration: a client may send as soon as the cluster
  // forms, and the DEALER drops what it cannot hand to a connected worker. The last worker is
  // the readers'.
  std::vector<Socket> worker_sockets;
  for (uint32_t w = 0; w <= options_.worker_threads; ++w) {
    ASSIGN_OR_RETURN(Socket socket, MakeSocket(context_, SocketKind::kDealer));
    const bool readers = w == options_.worker_threads;
    RETURN_IF_ERROR(ConnectSocket(socket, readers ? kReadersEndpoint : backend_endpoint_));
    worker_sockets.push_back(std::move(socket));
  }
  RETURN_IF_ERROR(Register());
  for (uint32_t w = 0; w <= options_.worker_threads; ++w) {
    // A socket may change threads with a full barrier in between; starting a thread is one.
    workers_.emplace_back([this, w, socket = std::move(worker_sockets[w])]() mutable {
      if (w == options_.worker_threads) {
        SetThreadName("ps-readers");
        LowestThreadPriority();
      } else {
        SetThreadName("ps-worker-" + std::to_string(w));
      }
      WorkerLoop(socket);
    });
  }
  if (service_->has_expiry()) {
    expiry_thread_ = std::thread([this] {
      SetThreadName("ps-expiry");
      ExpiryLoop();
    });
  }
  MoverOptions mover;
  mover.scheduler_endpoint = options_.scheduler_endpoint;
  mover.heartbeat_interval = options_.heartbeat_interval;
  mover.bandwidth_bytes_per_second = options_.move_bandwidth;
  mover_ = std::make_unique<PartitionMover>(*service_, context_, mover, [this] { RequestStop(); });
  mover_thread_ = std::thread([this] {
    SetThreadName("ps-mover");
    mover_->Run(workers_stop_);
  });
  started_ = true;
  spdlog::info("server {}: serving on {}{} with {} worker threads, owning {} partitions",
               service_->server_id(), endpoint_,
               endpoint_ == bound_endpoint_ ? "" : " (bound at " + bound_endpoint_ + ")",
               options_.worker_threads, service_->Stats().partitions_owned);
  return Status::Ok();
}

Status Server::Register() {
  RpcChannel scheduler(context_, options_.scheduler_endpoint, options_.security.scheduler_key);
  const auto deadline = std::chrono::steady_clock::now() + options_.register_timeout;
  Status last = Unavailable("never tried");
  while (std::chrono::steady_clock::now() < deadline) {
    if (stop_requested_.load(std::memory_order_relaxed))
      return Aborted("stopped while registering");
    const uint64_t id = scheduler.NextRequestId();
    auto reply = scheduler.Call(id, wire::EncodeRegisterServer({id, 0}, endpoint_, options_.join),
                                Millis(1000));
    if (!reply.ok()) {
      last = reply.status();
      continue;  // scheduler not up yet, or still waiting for the other servers
    }
    if (!reply->status.ok()) return reply->status.WithContext("registering with the scheduler");
    auto* registration = std::get_if<wire::Registration>(&reply->body);
    if (registration == nullptr) return Internal("scheduler answered registration without payload");
    RETURN_IF_ERROR(RecordIdentity(registration->id));
    ASSIGN_OR_RETURN(ShardStorage storage, OpenStorage(registration->tables));
    ShardPolicy policy = options_.policy;
    policy.grant_key = registration->grant_key;
    ASSIGN_OR_RETURN(service_, ShardService::Create(registration->id, registration->tables,
                                                    registration->routing, storage, policy));
    return Status::Ok();
  }
  return DeadlineExceeded("no registration from scheduler " + options_.scheduler_endpoint +
                          " within " + std::to_string(options_.register_timeout.count()) +
                          " ms (last: " + last.ToString() + ")");
}

std::string Server::RecordedEndpoint() const {
  if (options_.data_dir.empty()) return "";
  const auto recorded = ReadIdentityFile(options_.data_dir);
  return recorded ? recorded->second : "";
}

Status Server::RecordIdentity(uint32_t server_id) {
  if (options_.data_dir.empty()) return Status::Ok();
  const std::filesystem::path dir(options_.data_dir);
  const std::filesystem::path file = dir / kIdentityFile;
  if (const auto recorded = ReadIdentityFile(options_.data_dir)) {
    const uint32_t recorded_id = recorded->first;
    if (recorded_id != server_id) {
      return FailedPrecondition("data directory '" + options_.data_dir + "' belongs to server " +
                                std::to_string(recorded_id) + ", but the scheduler assigned id " +
                                std::to_string(server_id));
    }
    return Status::Ok();
  }
  RETURN_IF_ERROR(MakeDirectories(dir.string()));
  return WriteFileAtomically(file.string(),
                             std::to_string(server_id) + " " + bound_endpoint_ + "\n");
}

Result<ShardStorage> Server::OpenStorage(const std::vector<TableSpec>& tables) {
  ShardStorage storage;
  if (options_.data_dir.empty()) return storage;
  std::map<std::string, uint32_t> floats_per_row;
  for (const TableSpec& spec : tables) {
    RETURN_IF_ERROR(embedding::ValidateTableSpec(spec));
    floats_per_row[spec.name] = embedding::EmbeddingTable::PersistedFloatsPerRow(spec);
  }
  embedding::RocksStoreOptions store_options;
  store_options.path = (std::filesystem::path(options_.data_dir) / kRowsDir).string();
  store_options.log_pushes = options_.durability != Durability::kFlush;
  store_options.sync_log = options_.durability == Durability::kSync;
  ASSIGN_OR_RETURN(store_, embedding::RocksStore::Open(store_options, floats_per_row));
  budget_ = std::make_unique<embedding::MemoryBudget>(options_.memory_budget_bytes);
  storage.store = store_.get();
  storage.budget = budget_.get();
  storage.pin_budget_bytes = options_.memory_budget_bytes / kPinShareOfBudget;
  storage.cold_file_dir = options_.data_dir;
  storage.cold_file_bytes = options_.cold_file_bytes.value_or(options_.memory_budget_bytes *
                                                              embedding::kColdFileTimesBudget);
  return storage;
}

void Server::Run() {
  if (!started_) return;
  // Two pollers: while a request waits for a worker's room, only replies are read.
  Poller both, replies_only;
  const size_t frontend = both.Add(frontend_);
  const size_t backend = both.Add(backend_);
  const size_t readers = both.Add(readers_backend_);
  const size_t backend_alone = replies_only.Add(backend_);
  const size_t readers_alone = replies_only.Add(readers_backend_);
  std::vector<Frame> waiting;  // a request no worker had room for yet
  while (!stop_requested_.load(std::memory_order_relaxed)) {
    const bool holding = !waiting.empty();
    Status polled = holding ? replies_only.Wait(kRetryInterval) : both.Wait(kPollInterval);
    if (!polled.ok()) {
      spdlog::error("server {}: {}", service_->server_id(), polled.ToString());
      break;
    }
    const bool reply_ready =
        holding ? replies_only.Readable(backend_alone) : both.Readable(backend);
    const bool reader_reply_ready =
        holding ? replies_only.Readable(readers_alone) : both.Readable(readers);
    if (!holding && both.Readable(frontend)) {
      waiting = ReceiveRequest(frontend_);
      // One worker: this thread serves a pull, push, lookup or hint itself, sparing two
      // hand-overs between threads (docs/benchmarks.md). The rest, which may take long (a
      // checkpoint), go to the worker so that the readers' replies keep flowing meanwhile; a
      // reader's request goes to the readers' worker.
      if (serves_requests_itself() && waiting.size() >= 3 && !FromReader(waiting) &&
          wire::IsDataPlaneRequest(waiting.back())) {
        std::vector<Frame> reply = Answer(waiting);
        SendReply(frontend_, reply);
        waiting.clear();
      }
    }
    // A send refused for a full queue leaves the frames as they were: tried again later.
    if (!waiting.empty()) {
      Socket& lane = FromReader(waiting) ? readers_backend_ : backend_;
      Status sent = SendFrames(lane, waiting);
      if (sent.ok()) {
        waiting.clear();
      } else if (sent.code() != StatusCode::kResourceExhausted) {
        spdlog::warn("server {}: dropping a request: {}", service_->server_id(), sent.ToString());
        waiting.clear();
      }
    }
    if (reply_ready) ForwardReply(backend_);
    if (reader_reply_ready) ForwardReply(readers_backend_);
  }
  Shutdown();
}

void Server::ForwardReply(Socket& lane) {
  auto frames = ReceiveFrames(lane, Millis(0));
  if (!frames.ok() || frames->empty()) return;
  SendReply(frontend_, *frames);
}

std::vector<Frame> Server::Answer(std::vector<Frame>& frames) {
  // [peer] [routing identity] [optional empty delimiter] payload
  const Peer peer = PeerFromFrame(frames.front());
  frames.erase(frames.begin());
  std::vector<Frame> reply;
  reply.push_back(std::move(frames.front()));
  Frame response;
  const bool has_delimiter = frames.size() == 3 && frames[1].size() == 0;
  if (frames.size() == 2 || has_delimiter) {
    if (has_delimiter) reply.emplace_back();
    response = service_->Handle(std::move(frames.back()), peer);
  } else {
    spdlog::warn("server {}: request with {} frames, expected one payload frame",
                 service_->server_id(), frames.size() - 1);
    response =
        wire::EncodeStatusResponse(0, service_->epoch(),
                                   InvalidArgument("a request must be one payload frame, got " +
                                                   std::to_string(frames.size() - 1) + " frames"));
  }
  reply.push_back(std::move(response));
  return reply;
}

void Server::SendReply(Socket& socket, std::vector<Frame>& reply) {
  Status sent = SendFrames(socket, reply);
  if (sent.ok()) return;
  // The peer does not read its replies (its queue is full), or is gone: its request times out.
  if (sent.code() == StatusCode::kResourceExhausted) {
    service_->counters().limits_hit().Count(Limit::kSocketQueue);
  }
  spdlog::warn("server {}: dropping a reply: {}", service_->server_id(), sent.ToString());
}

void Server::WorkerLoop(Socket& socket) {
  while (!workers_stop_.load(std::memory_order_relaxed)) {
    auto frames = ReceiveFrames(socket, kPollInterval);
    if (!frames.ok()) continue;  // timeout: check the stop flag
    if (frames->size() < 3) continue;
    std::vector<Frame> reply = Answer(*frames);
    SendReply(socket, reply);
  }
}

void Server::ExpiryLoop() {
  auto next = std::chrono::steady_clock::now() + options_.expiry_sweep;
  while (!workers_stop_.load(std::memory_order_relaxed)) {
    std::this_thread::sleep_for(kPollInterval);
    if (std::chrono::steady_clock::now() < next) continue;
    auto expired = service_->ExpireRows();
    if (!expired.ok()) {
      spdlog::error("server {}: expiring rows: {}", service_->server_id(),
                    expired.status().ToString());
    } else if (*expired > 0) {
      spdlog::info("server {}: {} rows expired", service_->server_id(), *expired);
    }
    next = std::chrono::steady_clock::now() + options_.expiry_sweep;
  }
}

void Server::Shutdown() {
  workers_stop_.store(true, std::memory_order_relaxed);
  if (mover_thread_.joinable()) mover_thread_.join();
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
  if (expiry_thread_.joinable()) expiry_thread_.join();
  frontend_.Close();
  backend_.Close();
  readers_backend_.Close();
  if (service_ != nullptr && store_ != nullptr) {
    Status flushed = service_->Flush();
    if (flushed.ok()) flushed = store_->Flush();
    if (!flushed.ok()) spdlog::error("server: flushing rows at shutdown: {}", flushed.ToString());
  }
}

}  // namespace ember::ps
