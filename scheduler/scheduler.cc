// Scheduler implementation.
#include "scheduler/scheduler.h"

#include <spdlog/spdlog.h>

#include <cstring>

#include "common/catch_exceptions.h"
#include "common/quote_for_error.h"
#include "scheduler/scheduler_metrics.h"

namespace ember::scheduler {
namespace {

// Names the scheduler registers over a run, per slot of limits.trainers.
constexpr size_t kNamesPerTrainerSlot = 4;

constexpr Millis kPollInterval{100};

std::string IdentityKey(const Frame& identity) {
  return std::string(static_cast<const char*>(identity.data()), identity.size());
}

Frame CopyFrame(const Frame& frame) {
  Frame copy(frame.size());
  if (frame.size() > 0) std::memcpy(copy.data(), frame.data(), frame.size());
  return copy;
}

}  // namespace

Scheduler::Scheduler(SchedulerOptions options)
    : options_(std::move(options)),
      context_(1, options_.security),
      barriers_(options_.limits.trainers, options_.sync.clock_timeout),
      clocks_(options_.sync),
      cuts_(options_.checkpoints, options_.sync.clock_timeout),
      moves_(options_.server_timeout, options_.moves_per_server) {
  context_.set_queue_limit(static_cast<int>(options_.limits.socket_queue));
}

Scheduler::~Scheduler() {
  socket_.Close();
}

Status Scheduler::Start() {
  if (options_.num_servers == 0) return InvalidArgument("scheduler: num_servers must be >= 1");
  if (options_.num_partitions < options_.num_servers) {
    return InvalidArgument("scheduler: " + std::to_string(options_.num_partitions) +
                           " partitions cannot be spread over " +
                           std::to_string(options_.num_servers) + " servers");
  }
  if (options_.tables.empty()) return InvalidArgument("scheduler: no tables declared");
  if (options_.tables.size() > options_.limits.tables_per_server) {
    return LimitExceeded(Limit::kTablesPerServer, options_.limits.tables_per_server,
                         "scheduler: a config with " + std::to_string(options_.tables.size()) +
                             " tables");
  }
  if (options_.checkpoints.every > 0 &&
      (options_.checkpoints.dir.empty() || options_.checkpoints.dir.front() != '/')) {
    return InvalidArgument("scheduler: periodic checkpoints need an absolute directory, got '" +
                           options_.checkpoints.dir + "'");
  }
  if (options_.security.enabled()) {
    ASSIGN_OR_RETURN(grant_signer_, GrantSigner::FromSecretKey(options_.security.own.secret_key));
  }
  routing_.num_partitions = options_.num_partitions;
  ASSIGN_OR_RETURN(const std::string bind, RestoreState());
  ASSIGN_OR_RETURN(socket_, MakeSocket(context_, SocketKind::kRouter));
  ASSIGN_OR_RETURN(endpoint_, BindSocket(socket_, bind));
  SendReplies();  // saves the state at once: the endpoint a restart binds again
  spdlog::info("scheduler: listening on {}, waiting for {} servers, {} partitions, {} tables",
               endpoint_, options_.num_servers, options_.num_partitions, options_.tables.size());
  return Status::Ok();
}

void Scheduler::Run() {
  while (!stop_requested_.load(std::memory_order_relaxed)) {
    auto message = ReceiveMessage(socket_, kPollInterval);
    if (message.ok()) HandleMessage(std::move(message->frames), message->peer);
    const auto now = std::chrono::steady_clock::now();
    if (!clocks_.ExpireSilent(now).empty()) ServeClockWaiters();
    AnswerBarriers(barriers_.Expire(now));
    if (routing_.ready()) {
      for (uint32_t server : moves_.ExpireSilent(now)) {
        spdlog::error("scheduler: server {} ({}) is dead: no heartbeat for {} ms; its partitions "
                      "wait for it to come back on its data directory",
                      server, servers_[server].endpoint, options_.server_timeout.count());
      }
    }
    ServeCut();
    SendReplies();
    if (!failure_.ok()) return;
    if (metrics_ != nullptr) metrics_->Publish(MetricsSnapshot());
  }
}

void Scheduler::Reply(const Frame& identity, Frame payload) {
  outbox_.emplace_back(CopyFrame(identity), std::move(payload));
}

void Scheduler::RefuseForLimit(const Frame& identity, uint64_t request_id, Limit limit,
                               uint64_t value, const std::string& what) {
  limits_hit_.Count(limit);
  const Status refused = LimitExceeded(limit, value, what);
  spdlog::warn("scheduler: request {} refused: {}", request_id, refused.ToString());
  Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch, refused));
}

size_t Scheduler::WaitersQueued() const {
  size_t waiters = waiting_servers_.size() + waiting_trainers_.size() + clock_waiters_.size() +
                   cut_waiters_.size() + checkpoint_waiters_.size();
  waiters += barriers_.waiting();
  return waiters;
}

bool Scheduler::AdmitWaiter(const Frame& identity, uint64_t request_id, const std::string& what) {
  const size_t queued = WaitersQueued();
  if (queued < options_.limits.waiters) return true;
  RefuseForLimit(identity, request_id, Limit::kWaiters, options_.limits.waiters,
                 what + ": " + std::to_string(queued) + " requests wait for their answer already");
  return false;
}

void Scheduler::HandleMessage(std::vector<Frame> frames, const Peer& peer) {
  HandleRequest(std::move(frames), peer);
  SendReplies();
}

void Scheduler::HandleRequest(std::vector<Frame> frames, const Peer& peer) {
  if (frames.size() < 2) return;
  Frame identity = std::move(frames.front());
  if (frames.size() > 2) {
    Reply(identity, wire::EncodeStatusResponse(
                        0, routing_.epoch,
                        InvalidArgument("a request must be one payload frame, got " +
                                        std::to_string(frames.size() - 1) + " frames")));
    return;
  }
  uint64_t request_id = 0;
  auto request = wire::DecodeRequest(std::move(frames.back()), &request_id);
  if (!request.ok()) {
    spdlog::warn("scheduler: undecodable request {}: {}", request_id, request.status().ToString());
    Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch, request.status()));
    return;
  }
  // The identity is handed to the handler (some keep it to answer later): a copy answers the
  // error an exception escaping the handler becomes.
  Frame reply_to = CopyFrame(identity);
  Status handled = CatchExceptions([&] { Dispatch(std::move(identity), *request, peer); });
  if (!handled.ok()) {
    const Status failed = handled.WithContext(
        "scheduler: handling a '" + std::string(wire::RequestKindName(request->body)) +
        "' request");
    spdlog::error("scheduler: request {}: {}", request->header.request_id, failed.ToString());
    Reply(reply_to, wire::EncodeStatusResponse(request->header.request_id, routing_.epoch, failed));
  }
}

void Scheduler::Dispatch(Frame identity, const wire::DecodedRequest& request, const Peer& peer) {
  const uint64_t id = request.header.request_id;
  Status allowed = wire::CheckSender(peer, request.body);
  if (allowed.ok()) allowed = CheckMember(request.body, peer);
  if (!allowed.ok()) {
    spdlog::debug("scheduler: {}", allowed.message());
    Reply(identity, wire::EncodeStatusResponse(id, routing_.epoch, allowed));
    return;
  }
  if (auto* reg = std::get_if<wire::RegisterServerRequest>(&request.body)) {
    HandleRegisterServer(std::move(identity), id, *reg, peer);
  } else if (auto* beat = std::get_if<wire::ServerHeartbeatRequest>(&request.body)) {
    HandleServerHeartbeat(identity, id, beat->server);
  } else if (auto* decision = std::get_if<wire::MoveDecisionRequest>(&request.body)) {
    HandleMoveDecision(identity, id, *decision);
  } else if (auto* drain = std::get_if<wire::DrainRequest>(&request.body)) {
    HandleDrain(identity, id, drain->server);
  } else if (std::holds_alternative<wire::ClusterStatusRequest>(request.body)) {
    HandleClusterStatus(identity, id);
  } else if (auto* trainer = std::get_if<wire::RegisterTrainerRequest>(&request.body)) {
    HandleRegisterTrainer(std::move(identity), id, trainer->name, peer);
  } else if (auto* reader = std::get_if<wire::RegisterReaderRequest>(&request.body)) {
    HandleRegisterReader(identity, id, reader->name, peer);
  } else if (std::holds_alternative<wire::GetRoutingRequest>(request.body)) {
    Reply(identity, wire::EncodeRoutingResponse(id, routing_));
  } else if (auto* barrier = std::get_if<wire::BarrierRequest>(&request.body)) {
    HandleBarrier(std::move(identity), id, *barrier);
  } else if (auto* clock = std::get_if<wire::TrainerClockRequest>(&request.body)) {
    HandleTrainerClock(std::move(identity), id, *clock);
  } else if (auto* heartbeat = std::get_if<wire::HeartbeatRequest>(&request.body)) {
    HandleHeartbeat(identity, id, heartbeat->trainer);
  } else if (auto* cut = std::get_if<wire::CheckpointCutRequest>(&request.body)) {
    HandleCheckpointCut(std::move(identity), id, *cut);
  } else if (auto* now = std::get_if<wire::CheckpointNowRequest>(&request.body)) {
    HandleCheckpointNow(std::move(identity), id, *now);
  } else if (std::holds_alternative<wire::PingRequest>(request.body)) {
    Reply(identity, wire::EncodeStatusResponse(id, routing_.epoch, Status::Ok()));
  } else {
    Reply(identity, wire::EncodeStatusResponse(
                        id, routing_.epoch,
                        InvalidArgument("the scheduler does not handle '" +
                                        std::string(wire::RequestKindName(request.body)) +
                                        "' requests")));
  }
}

wire::Registration Scheduler::RegistrationFor(uint32_t member_id) const {
  wire::Registration registration{member_id, options_.tables, routing_};
  if (clocks_.is_member(member_id)) registration.clock = clocks_.clock_of(member_id);
  if (grant_signer_) registration.grant_key = grant_signer_->public_key();
  registration.sync = options_.sync;
  return registration;
}

void Scheduler::HandleRegisterServer(Frame identity, uint64_t request_id,
                                     const wire::RegisterServerRequest& registration,
                                     const Peer& peer) {
  const std::string& endpoint = registration.endpoint;
  if (endpoint.empty()) {
    Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch,
                                               InvalidArgument("server registered no endpoint")));
    return;
  }
  uint32_t server_id = static_cast<uint32_t>(servers_.size());
  for (const ServerInfo& known : servers_) {
    if (known.endpoint != endpoint) continue;
    if (known.public_key != peer.public_key) {
      // The key a server registered with is what clients and other servers trust at its
      // endpoint: nobody else may take the endpoint over.
      Reply(identity, wire::EncodeStatusResponse(
                          request_id, routing_.epoch,
                          PermissionDenied("server " + std::to_string(known.id) + " at " +
                                           endpoint + " registered with another key")));
      return;
    }
    server_id = known.id;  // a resent registration
  }
  if (server_id == servers_.size() && routing_.ready() && registration.join) {
    // A server joining the formed cluster: known to everyone at once (new epoch), partitions
    // follow as its moves commit.
    servers_.push_back(ServerInfo{server_id, endpoint, peer.public_key});
    routing_.servers.push_back(servers_.back());
    ++routing_.epoch;
    moves_.Join(routing_, std::chrono::steady_clock::now());
    spdlog::info("scheduler: server {} joined at {} (epoch {}); {} partition moves planned",
                 server_id, endpoint, routing_.epoch, moves_.moves_planned());
  }
  if (server_id == servers_.size()) {
    if (routing_.ready()) {
      Reply(identity, wire::EncodeStatusResponse(
                          request_id, routing_.epoch,
                          FailedPrecondition("the cluster already has its " +
                                             std::to_string(servers_.size()) + " servers")));
      return;
    }
    servers_.push_back(ServerInfo{server_id, endpoint, peer.public_key});
    spdlog::info("scheduler: server {} registered at {} ({}/{})", server_id, endpoint,
                 servers_.size(), options_.num_servers);
  }
  if (routing_.ready()) {
    Reply(identity, wire::EncodeRegistrationResponse(request_id, RegistrationFor(server_id)));
    return;
  }
  if (servers_.size() < options_.num_servers &&
      !AdmitWaiter(identity, request_id, "registration of server " + std::to_string(server_id))) {
    return;
  }
  waiting_servers_.push_back(Waiter{std::move(identity), request_id, server_id});
  if (servers_.size() == options_.num_servers) FormCluster();
}

void Scheduler::HandleRegisterTrainer(Frame identity, uint64_t request_id,
                                      const std::string& name, const Peer& peer) {
  const bool known = trainer_ids_.count(name) != 0;
  // Active trainers hold the slots: one that leaves or falls silent frees its own. The names
  // ever registered are bounded too.
  const uint32_t live = clocks_.CountActive(std::chrono::steady_clock::now());
  if (!known && (live >= options_.limits.trainers ||
                 trainer_ids_.size() >= kNamesPerTrainerSlot * options_.limits.trainers)) {
    RefuseForLimit(identity, request_id, Limit::kTrainers, options_.limits.trainers,
                   "registration of trainer " + QuoteForError(name) + ": " +
                       std::to_string(live) + " trainers are active, " +
                       std::to_string(trainer_ids_.size()) + " names registered over the run " +
                       "(a slot frees when a trainer leaves or is silent for " +
                       std::to_string(options_.sync.trainer_timeout.count()) + " ms)");
    return;
  }
  if (!known && clocks_.any_stale()) {
    // Its starting clock would come from clocks the restart may have set back.
    Reply(identity, wire::EncodeStatusResponse(
                        request_id, routing_.epoch,
                        Unavailable("registration of trainer " + QuoteForError(name) +
                                    ": the scheduler restarted and waits for the trainers' clocks; "
                                    "ask again")));
    return;
  }
  if (!routing_.ready() &&
      !AdmitWaiter(identity, request_id, "registration of trainer " + QuoteForError(name))) {
    return;
  }
  auto [it, inserted] = trainer_ids_.emplace(name, static_cast<uint32_t>(trainer_ids_.size()));
  if (peer.authenticated()) trainer_keys_.emplace(it->second, peer.public_key);
  if (inserted) spdlog::info("scheduler: trainer {} registered as {}", QuoteForError(name), it->second);
  clocks_.Join(it->second, name, std::chrono::steady_clock::now());
  ServeClockWaiters();  // the expected number of trainers may be complete now
  if (routing_.ready()) {
    Reply(identity, wire::EncodeRegistrationResponse(request_id, RegistrationFor(it->second)));
    return;
  }
  waiting_trainers_.push_back(Waiter{std::move(identity), request_id, it->second});
}

void Scheduler::HandleRegisterReader(const Frame& identity, uint64_t request_id,
                                     const std::string& name, const Peer& peer) {
  // A reader is not a member: nothing is stored for it, so it needs no slot and no bound. Before
  // the cluster forms it is told to ask again (its client retries until its register timeout).
  if (!routing_.ready()) {
    Reply(identity, wire::EncodeStatusResponse(
                        request_id, routing_.epoch,
                        Unavailable("registration of reader " + QuoteForError(name) +
                                    ": the cluster has not formed yet; ask again")));
    return;
  }
  spdlog::debug("scheduler: reader {} ({}) registered", QuoteForError(name), peer.Describe());
  Reply(identity,
        wire::EncodeRegistrationResponse(request_id, RegistrationFor(wire::kReaderId)));
}

void Scheduler::FormCluster() {
  routing_ = MakeBalancedRouting(options_.num_partitions, servers_, /*epoch=*/1);
  moves_.Start(static_cast<uint32_t>(servers_.size()), std::chrono::steady_clock::now());
  spdlog::info("scheduler: cluster formed with {} servers, routing epoch {}", servers_.size(),
               routing_.epoch);
  for (Waiter& waiter : waiting_servers_) {
    Reply(waiter.identity,
          wire::EncodeRegistrationResponse(waiter.request_id, RegistrationFor(waiter.member_id)));
  }
  for (Waiter& waiter : waiting_trainers_) {
    Reply(waiter.identity,
          wire::EncodeRegistrationResponse(waiter.request_id, RegistrationFor(waiter.member_id)));
  }
  waiting_servers_.clear();
  waiting_trainers_.clear();
}

void Scheduler::HandleBarrier(Frame identity, uint64_t request_id,
                              const wire::BarrierRequest& barrier) {
  const std::string what = "barrier " + QuoteForError(barrier.name);
  if (barrier.count == 0) {  // (Barriers checks the count's range; this answer is the shortest)
    Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch,
                                               InvalidArgument(what + " with count 0")));
    return;
  }
  if (barrier.name.size() > options_.limits.barrier_name_bytes) {
    RefuseForLimit(identity, request_id, Limit::kBarrierNameBytes,
                   options_.limits.barrier_name_bytes,
                   what + ": a name of " + std::to_string(barrier.name.size()) + " bytes");
    return;
  }
  if (!barriers_.IsOpen(barrier.name) && barriers_.open() >= options_.limits.open_barriers) {
    RefuseForLimit(identity, request_id, Limit::kOpenBarriers, options_.limits.open_barriers,
                   what + ": " + std::to_string(barriers_.open()) + " barriers are open (an " +
                       "arrival expires " + std::to_string(barriers_.lease().count()) +
                       " ms after it arrived, closing a barrier nobody waits at)");
    return;
  }
  std::string key = IdentityKey(identity);  // before `identity` is moved from
  if (!barriers_.Waits(barrier.name, key) && !AdmitWaiter(identity, request_id, what)) return;
  Frame reply_to = CopyFrame(identity);
  auto answers = barriers_.Arrive(barrier.name, barrier.count, std::move(key),
                                  {std::move(identity), request_id},
                                  std::chrono::steady_clock::now());
  if (!answers.ok()) {
    Reply(reply_to, wire::EncodeStatusResponse(request_id, routing_.epoch, answers.status()));
    return;
  }
  AnswerBarriers(std::move(*answers));
}

void Scheduler::AnswerBarriers(std::vector<Barriers::Answer> answers) {
  for (Barriers::Answer& answer : answers) {
    Reply(answer.arrival.identity, wire::EncodeStatusResponse(answer.arrival.request_id,
                                                              routing_.epoch, answer.status));
  }
}

void Scheduler::HandleTrainerClock(Frame identity, uint64_t request_id,
                                   const wire::TrainerClockRequest& clock) {
  const auto now = std::chrono::steady_clock::now();
  // Refused before it is recorded: a refused report changes nothing.
  if (!clock.leave && !AdmitWaiter(identity, request_id,
                                   "clock " + std::to_string(clock.clock) + " of trainer " +
                                       std::to_string(clock.trainer))) {
    return;
  }
  Status recorded = clock.leave ? clocks_.Leave(clock.trainer, clock.clock, now)
                                : clocks_.Report(clock.trainer, clock.clock, now);
  if (!recorded.ok() || clock.leave) {
    Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch, recorded));
    if (recorded.ok()) {
      ServeClockWaiters();  // nobody waits for the leaver any more
      ServeCut();
    }
    return;
  }
  // A report sent again (the scheduler restarted, or the answer was slow) replaces the earlier one,
  // whose sender no longer listens for it.
  std::erase_if(clock_waiters_, [&](const Waiter& waiter) {
    return waiter.member_id == clock.trainer && waiter.clock == clock.clock;
  });
  clock_waiters_.push_back(Waiter{std::move(identity), request_id, clock.trainer, clock.clock});
  ServeClockWaiters();
}

void Scheduler::HandleHeartbeat(const Frame& identity, uint64_t request_id,
                                uint32_t trainer) {
  Status alive = clocks_.Heartbeat(trainer, std::chrono::steady_clock::now());
  if (alive.ok() && !clocks_.failure().ok()) alive = clocks_.failure();
  Reply(identity, wire::EncodeStatusResponse(request_id, routing_.epoch, alive));
}

void Scheduler::ServeClockWaiters() {
  std::vector<Waiter> still_waiting;
  // The trainers of a clock are usually granted together, with the same grant: signed once.
  wire::ClockGrant last_signed;
  for (Waiter& waiter : clock_waiters_) {
    auto grant = clocks_.TryGrant(waiter.clock);
    if (!grant.ok()) {
      Reply(waiter.identity,
            wire::EncodeStatusResponse(waiter.request_id, routing_.epoch, grant.status()));
    } else if (grant->has_value()) {
      (*grant)->cut = cuts_.AnnouncedAfter(waiter.clock);
      if (grant_signer_ && options_.sync.mode == SyncMode::kBsp) {
        if (last_signed.signature.empty() || last_signed.clock != (*grant)->clock ||
            last_signed.trainers != (*grant)->trainers) {
          last_signed = **grant;
          last_signed.signature = grant_signer_->Sign(
              GrantTerms{(*grant)->clock, (*grant)->trainers, options_.sync.combine});
        }
        (*grant)->signature = last_signed.signature;
      }
      Reply(waiter.identity,
            wire::EncodeClockGrantResponse(waiter.request_id, routing_.epoch, **grant));
    } else {
      still_waiting.push_back(std::move(waiter));
    }
  }
  clock_waiters_ = std::move(still_waiting);
}

}  // namespace ember::scheduler
