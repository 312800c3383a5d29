// Replica: a serving replica process (replica.h).
#include "ps/replica/replica.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

#include "common/advertised_endpoint.h"
#include "common/file_io.h"
#include "common/thread_name.h"

namespace ember::ps {
namespace {

constexpr const char* kEndpointFile = "replica-endpoint";  // the endpoint it bound
constexpr const char* kRowsDir = "rows";                   // its saved rows, a checkpoint
constexpr uint64_t kMaxEndpointFileBytes = 4096;
constexpr Millis kPollInterval{100};

}  // namespace

Replica::Replica(ReplicaOptions options)
    : options_(std::move(options)), context_(std::make_shared<Context>(1, options_.security)) {
  context_->set_queue_limit(static_cast<int>(options_.limits.socket_queue));
}

Replica::~Replica() { Shutdown(); }

bool Replica::ready() const { return loaded_ || (feed_ && feed_->stats().caught_up); }

std::string Replica::RecordedEndpoint() const {
  if (options_.data_dir.empty()) return "";
  auto text = ReadWholeFile(options_.data_dir + "/" + kEndpointFile, kMaxEndpointFileBytes);
  if (!text.ok()) return "";
  std::string endpoint = *text;
  while (!endpoint.empty() && (endpoint.back() == '\n' || endpoint.back() == ' ')) {
    endpoint.pop_back();
  }
  return endpoint;
}

Status Replica::RecordEndpoint() const {
  if (options_.data_dir.empty()) return Status::Ok();
  RETURN_IF_ERROR(MakeDirectories(options_.data_dir));
  const std::string bound = RecordedEndpoint();
  if (!bound.empty()) return Status::Ok();
  return WriteFileAtomically(options_.data_dir + "/" + kEndpointFile, endpoint_ + "\n");
}

Status Replica::LoadRows() {
  const std::string saved = options_.data_dir.empty() ? "" : options_.data_dir + "/" + kRowsDir;
  if (!saved.empty() && std::filesystem::exists(saved + "/MANIFEST")) {
    RETURN_IF_ERROR(store_->Load(saved).WithContext("loading the rows saved in '" + saved + "'"));
    spdlog::info("replica: serving the rows saved in '{}' while it catches up", saved);
    loaded_ = true;
  } else if (!options_.checkpoint.empty()) {
    RETURN_IF_ERROR(store_->Load(options_.checkpoint)
                        .WithContext("loading checkpoint '" + options_.checkpoint + "'"));
    spdlog::info("replica: serving checkpoint '{}' while it catches up", options_.checkpoint);
    loaded_ = true;
  }
  return Status::Ok();
}

Status Replica::Start() {
  ASSIGN_OR_RETURN(frontend_, MakeSocket(*context_, SocketKind::kRouter));
  const std::string recorded = RecordedEndpoint();
  auto bound = BindSocket(frontend_, recorded.empty() ? options_.bind : recorded);
  if (!bound.ok()) return bound.status().WithContext("replica: binding its socket");
  ASSIGN_OR_RETURN(endpoint_, AdvertisedEndpoint(*bound, options_.advertise));
  RETURN_IF_ERROR(RecordEndpoint());
  scheduler_ = std::make_unique<SchedulerClient>(options_.scheduler_endpoint, context_);
  ASSIGN_OR_RETURN(TrainerRegistration registration,
                   scheduler_->RegisterReader(options_.name, options_.register_timeout));
  ASSIGN_OR_RETURN(store_, ReplicaStore::Create(registration.tables,
                                                registration.routing.num_partitions));
  RETURN_IF_ERROR(LoadRows());
  service_ = std::make_unique<ReplicaService>(
      *store_, endpoint_, options_.security.own.public_key, [this] { return ready(); },
      options_.limits.keys_per_message);
  feed_ = std::make_unique<ReplicaFeed>(*context_, *scheduler_, *store_,
                                        std::move(registration.routing), options_.feed);
  feed_thread_ = std::thread([this] {
    SetThreadName("replica-feed");
    feed_->Run(threads_stop_);
  });
  if (!options_.data_dir.empty()) {
    save_thread_ = std::thread([this] {
      SetThreadName("replica-save");
      SaveLoop();
    });
  }
  started_ = true;
  spdlog::info("replica: serving lookups on {}, following {} tables of the cluster at {}",
               endpoint_, store_->tables().size(), options_.scheduler_endpoint);
  return Status::Ok();
}

void Replica::Run() {
  if (!started_) return;
  while (!stop_.load(std::memory_order_relaxed)) {
    auto message = ReceiveMessage(frontend_, kPollInterval);
    if (!message.ok()) continue;  // timeout: check the stop flag
    std::vector<Frame>& frames = message->frames;
    // [routing identity] [optional empty delimiter] payload
    const bool has_delimiter = frames.size() == 3 && frames[1].size() == 0;
    if (frames.size() != 2 && !has_delimiter) continue;
    std::vector<Frame> reply;
    reply.push_back(std::move(frames.front()));
    if (has_delimiter) reply.emplace_back();
    reply.push_back(service_->Handle(std::move(frames.back()), message->peer));
    if (Status sent = SendFrames(frontend_, reply); !sent.ok()) {
      spdlog::warn("replica: reply dropped: {}", sent.ToString());
    }
  }
  Shutdown();
}

Status Replica::Save() const {
  if (options_.data_dir.empty() || !ready()) return Status::Ok();
  return store_->Save(options_.data_dir + "/" + kRowsDir);
}

void Replica::SaveLoop() {
  auto next = std::chrono::steady_clock::now() + options_.save_interval;
  while (!threads_stop_.load(std::memory_order_relaxed)) {
    std::this_thread::sleep_for(kPollInterval);
    if (std::chrono::steady_clock::now() < next) continue;
    if (Status saved = Save(); !saved.ok()) spdlog::warn("replica: {}", saved.ToString());
    next = std::chrono::steady_clock::now() + options_.save_interval;
  }
}

void Replica::Shutdown() {
  if (!started_) return;
  started_ = false;
  threads_stop_.store(true);
  if (feed_thread_.joinable()) feed_thread_.join();
  if (save_thread_.joinable()) save_thread_.join();
  feed_->Leave();
  if (Status saved = Save(); !saved.ok()) spdlog::warn("replica: {}", saved.ToString());
  const FeedStats stats = feed_->stats();
  spdlog::info("replica: stopped after {} rounds; stream: {} rows, {} deletions, {} bytes ({:.1f} "
               "bytes per row), {} streams started again, {} failed requests",
               stats.rounds, stats.rows, stats.deleted, stats.bytes,
               stats.rows > 0 ? static_cast<double>(stats.bytes) / stats.rows : 0.0,
               stats.restarts, stats.failures);
}

}  // namespace ember::ps
