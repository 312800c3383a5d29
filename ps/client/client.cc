// Client implementation: registration, splitting by owner, the I/O thread, retries and resends.
#include "ps/client/client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "common/thread_name.h"

namespace ember::ps {
namespace {

using Clock = std::chrono::steady_clock;
constexpr Millis kIdlePoll{100};
// Wait before resending keys a server asked to retry.
constexpr Millis kRetryDelay{5};

uint64_t RandomSenderId() {
  std::random_device device;
  uint64_t id = 0;
  while (id == 0) id = (uint64_t{device()} << 32) ^ device();
  return id;
}

}  // namespace

struct Client::Operation {
  enum class Kind { kPull, kPush };
  Kind kind = Kind::kPull;
  const TableSpec* table = nullptr;
  uint64_t table_id = 0;
  std::span<const uint64_t> keys;
  std::span<float> rows;             // pull destination
  std::span<const float> gradients;  // push source
  uint64_t clock = 0;
  bool deferred = false;  // bsp push held by the servers until its clock is applied
  Ticket ticket = Ticket::Pending();
  Clock::time_point deadline;
  uint32_t outstanding = 0;  // sub-requests in flight
  uint32_t routing_retries = 0;
  bool finished = false;
};

Client::Client(ClientOptions options)
    : options_(std::move(options)), context_(1), sender_id_(RandomSenderId()) {}

Result<std::unique_ptr<Client>> Client::Connect(ClientOptions options) {
  if (options.scheduler_endpoint.empty()) return InvalidArgument("client: no scheduler endpoint");
  std::unique_ptr<Client> client(new Client(std::move(options)));
  RETURN_IF_ERROR(client->Register());
  ASSIGN_OR_RETURN(client->wake_receiver_, MakeSocket(client->context_, SocketKind::kPull));
  ASSIGN_OR_RETURN(std::string wake,
                   BindSocket(client->wake_receiver_, "inproc://ember-client-wake"));
  ASSIGN_OR_RETURN(client->wake_sender_, MakeSocket(client->context_, SocketKind::kPush));
  RETURN_IF_ERROR(ConnectSocket(client->wake_sender_, wake));
  client->routing_channel_ =
      std::make_unique<RpcChannel>(client->context_, client->options_.scheduler_endpoint);
  RETURN_IF_ERROR(client->EnsureServerSockets());
  client->io_thread_ = std::thread([c = client.get()] {
    SetThreadName("ps-client-io");
    c->IoLoop();
  });
  if (client->options_.heartbeat_interval.count() > 0) {
    client->heartbeat_thread_ = std::thread([c = client.get()] {
      SetThreadName("ps-client-beat");
      c->HeartbeatLoop();
    });
  }
  return client;
}

Client::~Client() {
  {
    std::lock_guard lock(heartbeat_mutex_);
    stopping_.store(true);
  }
  heartbeat_wake_.notify_all();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  if (io_thread_.joinable()) io_thread_.join();
  // Anything still queued or in flight fails rather than hanging its waiters.
  for (auto& op : submissions_) op->ticket.Complete(Aborted("client closed"));
  for (auto& op : active_) op->ticket.Complete(Aborted("client closed"));
}

Status Client::Register() {
  control_channel_ = std::make_unique<RpcChannel>(context_, options_.scheduler_endpoint);
  const auto deadline = Clock::now() + options_.register_timeout;
  Status last = Unavailable("never tried");
  while (Clock::now() < deadline) {
    const uint64_t id = control_channel_->NextRequestId();
    auto reply = control_channel_->Call(id, wire::EncodeRegisterTrainer({id, 0}, options_.name),
                                        Millis(1000));
    if (!reply.ok()) {
      last = reply.status();
      continue;
    }
    if (!reply->status.ok()) return reply->status.WithContext("registering with the scheduler");
    auto* registration = std::get_if<wire::Registration>(&reply->body);
    if (registration == nullptr || !registration->routing.ready()) {
      return Internal("scheduler answered a trainer registration without a ready routing table");
    }
    trainer_id_ = registration->id;
    start_clock_ = registration->clock;
    tables_ = registration->tables;
    routing_ = registration->routing;
    return Status::Ok();
  }
  return DeadlineExceeded("no registration from scheduler " + options_.scheduler_endpoint +
                          " within " + std::to_string(options_.register_timeout.count()) +
                          " ms (last: " + last.ToString() + ")");
}

Result<const TableSpec*> Client::FindTable(std::string_view name) const {
  for (const TableSpec& spec : tables_) {
    if (spec.name == name) return &spec;
  }
  return NotFound("unknown table '" + std::string(name) + "'");
}

RoutingTable Client::routing() const {
  std::lock_guard lock(routing_mutex_);
  return routing_;
}

Ticket Client::Pull(std::string_view table, std::span<const uint64_t> keys, std::span<float> out) {
  auto spec = FindTable(table);
  if (!spec.ok()) return Ticket::Done(spec.status().WithContext("pull"));
  if (out.size() != keys.size() * (*spec)->dim) {
    return Ticket::Done(InvalidArgument(
        "pull from '" + std::string(table) + "': " + std::to_string(keys.size()) + " keys of dim " +
        std::to_string((*spec)->dim) + " need " + std::to_string(keys.size() * (*spec)->dim) +
        " floats of output, got " + std::to_string(out.size())));
  }
  auto op = std::make_shared<Operation>();
  op->kind = Operation::Kind::kPull;
  op->table = *spec;
  op->keys = keys;
  op->rows = out;
  return Submit(std::move(op));
}

Ticket Client::Push(std::string_view table, std::span<const uint64_t> keys,
                    std::span<const float> gradients, uint64_t clock, bool deferred) {
  auto spec = FindTable(table);
  if (!spec.ok()) return Ticket::Done(spec.status().WithContext("push"));
  if (gradients.size() != keys.size() * (*spec)->dim) {
    return Ticket::Done(InvalidArgument(
        "push to '" + std::string(table) + "': " + std::to_string(keys.size()) + " keys of dim " +
        std::to_string((*spec)->dim) + " need " + std::to_string(keys.size() * (*spec)->dim) +
        " gradient floats, got " + std::to_string(gradients.size())));
  }
  auto op = std::make_shared<Operation>();
  op->kind = Operation::Kind::kPush;
  op->table = *spec;
  op->keys = keys;
  op->gradients = gradients;
  op->clock = clock;
  op->deferred = deferred;
  return Submit(std::move(op));
}

Ticket Client::Submit(std::shared_ptr<Operation> op) {
  if (op->keys.empty()) return Ticket::Done(Status::Ok());
  op->table_id = HashName(op->table->name);
  op->deadline = Clock::now() + options_.request_timeout;
  Ticket ticket = op->ticket;
  std::lock_guard lock(submit_mutex_);
  if (stopping_.load()) return Ticket::Done(Aborted("client closed"));
  submissions_.push_back(std::move(op));
  // If the wake-up cannot be sent, the I/O thread still polls the queue on its idle timeout.
  (void)SendFrame(wake_sender_, Frame());
  return ticket;
}

Result<std::vector<wire::ServerStats>> Client::Stats(Millis timeout) {
  const RoutingTable current = routing();
  std::vector<wire::ServerStats> all;
  for (const ServerInfo& server : current.servers) {
    RpcChannel channel(context_, server.endpoint);
    const uint64_t id = channel.NextRequestId();
    ASSIGN_OR_RETURN(auto reply,
                     channel.Call(id, wire::EncodeStatsRequest({id, current.epoch}), timeout));
    if (!reply.status.ok()) return reply.status.WithContext("stats of " + server.endpoint);
    auto* stats = std::get_if<wire::ServerStats>(&reply.body);
    if (stats == nullptr) return Internal("stats reply without payload from " + server.endpoint);
    all.push_back(std::move(*stats));
  }
  return all;
}

Status Client::Barrier(std::string_view name, uint32_t count, Millis timeout) {
  std::lock_guard lock(control_mutex_);
  const uint64_t id = control_channel_->NextRequestId();
  ASSIGN_OR_RETURN(auto reply,
                   control_channel_->Call(id, wire::EncodeBarrier({id, 0}, name, count), timeout));
  return reply.status;
}

// ---- I/O thread ----

Status Client::EnsureServerSockets() {
  const RoutingTable current = routing();
  for (const ServerInfo& server : current.servers) {
    if (server.id < links_.size() && links_[server.id].endpoint == server.endpoint) continue;
    if (server.id >= links_.size()) links_.resize(server.id + 1);
    ServerLink& link = links_[server.id];
    // The monitor of an old socket is closed after it.
    ServerLink fresh;
    ASSIGN_OR_RETURN(fresh.socket, MakeSocket(context_, SocketKind::kDealer));
    ASSIGN_OR_RETURN(fresh.monitor,
                     MonitorLink(context_, fresh.socket,
                                 "inproc://ember-client-link-" + std::to_string(links_made_++)));
    RETURN_IF_ERROR(ConnectSocket(fresh.socket, server.endpoint));
    fresh.endpoint = server.endpoint;
    link.socket.Close();
    link = std::move(fresh);
  }
  return Status::Ok();
}

Status Client::RefreshRouting() {
  const uint64_t id = routing_channel_->NextRequestId();
  ASSIGN_OR_RETURN(auto reply, routing_channel_->Call(id, wire::EncodeGetRouting({id, 0}),
                                                      options_.request_timeout));
  RETURN_IF_ERROR(reply.status);
  auto* fresh = std::get_if<RoutingTable>(&reply.body);
  if (fresh == nullptr || !fresh->ready()) return Unavailable("scheduler has no routing table");
  {
    std::lock_guard lock(routing_mutex_);
    if (fresh->epoch > routing_.epoch) routing_ = std::move(*fresh);
  }
  return EnsureServerSockets();
}

void Client::IoLoop() {
  Poller poller;
  while (!stopping_.load(std::memory_order_relaxed)) {
    // The wake socket (index 0), then each server's socket and its monitor.
    poller.Clear();
    poller.Add(wake_receiver_);
    for (ServerLink& link : links_) {
      poller.Add(link.socket);
      poller.Add(link.monitor);
    }
    const size_t polled_links = links_.size();
    Status polled = poller.Wait(retries_.empty() ? kIdlePoll : kRetryDelay);
    if (!polled.ok()) {
      spdlog::error("client: {}", polled.ToString());
      continue;
    }
    if (poller.Readable(0)) {
      while (ReceiveFrames(wake_receiver_, Millis(0)).ok()) {
      }
    }
    DrainSubmissions();
    for (uint32_t s = 0; s < polled_links; ++s) {
      if (poller.Readable(1 + 2 * s)) {
        // Drain every reply that is ready on this socket.
        for (;;) {
          auto frames = ReceiveFrames(links_[s].socket, Millis(0));
          if (!frames.ok() || frames->empty()) break;
          OnReply(std::move(frames->back()));
        }
      }
      if (poller.Readable(2 + 2 * s)) OnLinkEvents(s);
    }
    SendDueRetries();
    ExpireDeadlines();
  }
}

void Client::SendDueRetries() {
  if (retries_.empty()) return;
  const auto now = Clock::now();
  std::vector<Retry> due;
  std::erase_if(retries_, [&](Retry& retry) {
    if (retry.at > now) return false;
    due.push_back(std::move(retry));
    return true;
  });
  if (due.empty()) return;
  Status refreshed = RefreshRouting();  // the move may have committed meanwhile
  for (Retry& retry : due) {
    --retry.op->outstanding;
    if (retry.op->finished) continue;
    if (!refreshed.ok()) {
      Fail(retry.op, refreshed.WithContext("refreshing routing for a retry"));
      continue;
    }
    Dispatch(retry.op, retry.positions);
  }
}

void Client::OnLinkEvents(uint32_t server) {
  ServerLink& link = links_[server];
  for (;;) {
    auto event = ReceiveLinkEvent(link.monitor);
    if (!event.ok()) return;  // none left
    if (*event == LinkEvent::kDown && !link.down) {
      link.down = true;
      // A server that holds no partition any more (drained) is not coming back for them: what
      // was in flight to it goes to the new owners.
      if (RefreshRouting().ok() && routing_.PartitionsOwnedBy(server) == 0) {
        spdlog::info(
            "client: server {} ({}) left; sending what was in flight to it to the "
            "partitions' new owners",
            server, link.endpoint);
        RerouteInFlight(server);
        continue;
      }
      spdlog::warn(
          "client: lost the connection to server {} ({}); what is in flight to it will "
          "be sent again once it is back",
          server, link.endpoint);
    } else if (*event == LinkEvent::kUp && link.down) {
      link.down = false;
      Resend(server);
    }
  }
}

void Client::RerouteInFlight(uint32_t server) {
  std::vector<InFlight> lost;
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (it->second.server == server) {
      lost.push_back(std::move(it->second));
      it = in_flight_.erase(it);
    } else {
      ++it;
    }
  }
  for (InFlight& entry : lost) {
    --entry.op->outstanding;
    if (!entry.op->finished) Dispatch(entry.op, entry.positions);
  }
}

void Client::Resend(uint32_t server) {
  std::vector<uint64_t> lost;
  for (auto& [id, entry] : in_flight_) {
    if (entry.server != server) continue;
    // What was sent while the connection was down is still queued and goes out by itself.
    if (!entry.queued_while_down) lost.push_back(id);
    entry.queued_while_down = false;
  }
  for (uint64_t id : lost) {
    auto it = in_flight_.find(id);
    if (it == in_flight_.end()) continue;  // its operation failed meanwhile
    const std::shared_ptr<Operation> op = it->second.op;
    std::vector<Frame> frames;
    frames.push_back(Encode(*op, id, it->second.positions));
    Status sent = SendFrames(links_[server].socket, frames);
    if (!sent.ok()) {
      Fail(op, sent.WithContext("sending again to server " + std::to_string(server)));
      continue;
    }
    resent_.fetch_add(1, std::memory_order_relaxed);
  }
  spdlog::info("client: server {} ({}) is back; sent the {} requests in flight to it again", server,
               links_[server].endpoint, lost.size());
}

void Client::DrainSubmissions() {
  std::deque<std::shared_ptr<Operation>> batch;
  {
    std::lock_guard lock(submit_mutex_);
    batch.swap(submissions_);
  }
  for (auto& op : batch) {
    active_.push_back(op);
    Dispatch(op, {});
  }
}

void Client::Dispatch(const std::shared_ptr<Operation>& op, std::span<const uint32_t> positions) {
  const RoutingTable& current = routing_;  // only this thread writes it
  const size_t count = positions.empty() ? op->keys.size() : positions.size();
  std::vector<std::vector<uint32_t>> by_server(current.servers.size());
  for (size_t i = 0; i < count; ++i) {
    const uint32_t position = positions.empty() ? static_cast<uint32_t>(i) : positions[i];
    by_server[current.OwnerOf(op->table_id, op->keys[position])].push_back(position);
  }
  const size_t max_keys = std::max<uint32_t>(options_.max_keys_per_message, 1);
  for (uint32_t server = 0; server < by_server.size(); ++server) {
    const std::vector<uint32_t>& share = by_server[server];
    for (size_t first = 0; first < share.size(); first += max_keys) {
      std::vector<uint32_t> subset(share.begin() + first,
                                   share.begin() + std::min(share.size(), first + max_keys));
      if (!Send(op, server, next_request_id_++, std::move(subset))) return;
    }
  }
}

Frame Client::Encode(const Operation& op, uint64_t request_id,
                              std::span<const uint32_t> positions) const {
  const wire::RequestHeader header{request_id, routing_.epoch};
  if (op.kind == Operation::Kind::kPull) {
    return wire::EncodePullSubset(header, op.table->name, op.keys, positions, options_.row_format);
  }
  // Every request below the lowest one in flight was answered.
  const uint64_t lowest =
      in_flight_.empty() ? request_id : std::min(request_id, in_flight_.begin()->first);
  return wire::EncodePushSubset(header, op.table->name, op.keys, op.gradients, op.table->dim,
                                positions, op.clock, options_.row_format, trainer_id_, op.deferred,
                                wire::PushSender{sender_id_, lowest});
}

bool Client::Send(const std::shared_ptr<Operation>& op, uint32_t server, uint64_t request_id,
                  std::vector<uint32_t> positions) {
  std::vector<Frame> frames;
  frames.push_back(Encode(*op, request_id, positions));
  Status sent = SendFrames(links_[server].socket, frames);
  if (!sent.ok()) {
    Fail(op, sent.WithContext("sending to server " + std::to_string(server)));
    return false;
  }
  ++op->outstanding;
  in_flight_.emplace(request_id, InFlight{op, server, std::move(positions), links_[server].down});
  return true;
}

void Client::OnReply(Frame payload) {
  auto response = wire::DecodeResponse(std::move(payload));
  if (!response.ok()) {
    spdlog::warn("client: dropping an undecodable reply: {}", response.status().ToString());
    return;
  }
  auto it = in_flight_.find(response->request_id);
  if (it == in_flight_.end()) return;  // late reply to an operation that already failed
  InFlight entry = std::move(it->second);
  in_flight_.erase(it);
  const std::shared_ptr<Operation>& op = entry.op;
  --op->outstanding;

  if (response->status.code() == StatusCode::kFailedPrecondition &&
      op->routing_retries < options_.max_routing_retries) {
    // The server does not own (some of) these keys any more: refresh and resend just them.
    ++op->routing_retries;
    Status refreshed = RefreshRouting();
    if (!refreshed.ok()) {
      Fail(op, refreshed.WithContext("refreshing routing after: " +
                                     std::string(response->status.message())));
      return;
    }
    Dispatch(op, entry.positions);
    return;
  }
  if (response->status.code() == StatusCode::kUnavailable &&
      Clock::now() + kRetryDelay < op->deadline) {
    // Held for a moment (a partition moving): send these keys again shortly, routed afresh.
    ++op->outstanding;
    retries_.push_back(Retry{Clock::now() + kRetryDelay, op, std::move(entry.positions)});
    return;
  }
  if (!response->status.ok()) {
    Fail(op, response->status.WithContext("server " + std::to_string(entry.server) + " (" +
                                          links_[entry.server].endpoint + ")"));
    return;
  }
  if (op->kind == Operation::Kind::kPull) {
    auto* rows = std::get_if<std::span<const float>>(&response->body);
    const uint32_t dim = op->table->dim;
    const size_t count = entry.positions.empty() ? op->keys.size() : entry.positions.size();
    if (rows == nullptr || rows->size() != count * dim) {
      Fail(op, DataLoss("server " + std::to_string(entry.server) + " answered a pull of " +
                        std::to_string(count) + " rows with " +
                        std::to_string(rows ? rows->size() : 0) + " floats"));
      return;
    }
    for (size_t i = 0; i < count; ++i) {
      const uint32_t position =
          entry.positions.empty() ? static_cast<uint32_t>(i) : entry.positions[i];
      std::memcpy(op->rows.data() + size_t{position} * dim, rows->data() + i * dim,
                  dim * sizeof(float));
    }
  }
  if (op->outstanding == 0 && !op->finished) {
    op->finished = true;
    op->ticket.Complete(Status::Ok());
    std::erase(active_, op);
  }
}

void Client::Fail(const std::shared_ptr<Operation>& op, Status status) {
  if (op->finished) return;
  op->finished = true;
  // Forget its other sub-requests so late replies never touch the caller's buffers.
  std::erase_if(in_flight_, [&](const auto& entry) { return entry.second.op == op; });
  op->ticket.Complete(std::move(status));
  std::erase(active_, op);
}

void Client::ExpireDeadlines() {
  const auto now = Clock::now();
  std::vector<std::shared_ptr<Operation>> expired;
  for (auto& op : active_) {
    if (now >= op->deadline) expired.push_back(op);
  }
  for (auto& op : expired) {
    // Name the servers that did not answer, and whether the connection to each is down.
    std::vector<uint32_t> silent;
    for (const auto& [id, entry] : in_flight_) {
      if (entry.op == op) silent.push_back(entry.server);
    }
    std::sort(silent.begin(), silent.end());
    silent.erase(std::unique(silent.begin(), silent.end()), silent.end());
    std::string servers;
    for (uint32_t server : silent) {
      servers += (servers.empty() ? "" : ", ") + std::to_string(server) + " (" +
                 links_[server].endpoint + (links_[server].down ? ", connection lost" : "") + ")";
    }
    Fail(op, DeadlineExceeded(std::string(op->kind == Operation::Kind::kPull ? "pull" : "push") +
                              " of " + std::to_string(op->keys.size()) + " keys from '" +
                              op->table->name + "' not answered within " +
                              std::to_string(options_.request_timeout.count()) + " ms by " +
                              (silent.size() == 1 ? "server " : "servers ") + servers));
  }
}

}  // namespace ember::ps
