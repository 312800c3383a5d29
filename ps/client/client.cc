// Client: set-up, registration, heartbeats, and submitting pulls and pushes to the I/O thread.
#include "ps/client/client.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/random_id.h"
#include "common/silence_log.h"
#include "common/thread_name.h"
#include "ps/client/client_internal.h"

namespace ember::ps {
namespace {

// The client's ZeroMQ context: its keys, and its sockets queue at most `queue_limit` messages
// per direction.
std::shared_ptr<Context> MakeContext(uint32_t queue_limit, const TransportSecurity& security) {
  auto context = std::make_shared<Context>(1, security);
  context->set_queue_limit(static_cast<int>(queue_limit));
  return context;
}

}  // namespace

Client::Impl::Impl(ClientOptions options)
    : options_(std::move(options)),
      sender_id_(RandomId()),
      context_(MakeContext(options_.limits.socket_queue, options_.security)),
      scheduler_context_(MakeContext(options_.limits.socket_queue, options_.security)),
      scheduler_(options_.scheduler_endpoint, scheduler_context_),
      links_(*context_) {}

Client::Impl::~Impl() {
  {
    std::lock_guard lock(heartbeat_mutex_);
    stopping_.store(true);
  }
  heartbeat_wake_.notify_all();
  // A thread waiting on a peer that is gone (the I/O thread refreshing the routing from a
  // scheduler that died, say) would hold up the joins for as long as its call's timeout.
  context_->Shutdown();
  scheduler_context_->Shutdown();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  if (io_thread_.joinable()) io_thread_.join();
  // Anything still queued or in flight fails rather than hanging its waiters.
  for (auto& op : submissions_) op->ticket.Complete(Aborted("client closed"));
  for (auto& op : active_) op->ticket.Complete(Aborted("client closed"));
  for (auto& call : call_submissions_) call->ticket.Complete(Aborted("client closed"));
  every_server_calls_.AbortAll(Aborted("client closed"));
}

Status Client::Impl::Register() {
  ASSIGN_OR_RETURN(TrainerRegistration registration,
                   options_.read_only
                       ? scheduler_.RegisterReader(options_.name, options_.register_timeout)
                       : scheduler_.RegisterTrainer(options_.name, options_.register_timeout));
  trainer_id_ = registration.trainer_id;
  start_clock_ = registration.start_clock;
  sync_ = registration.sync;
  tables_ = std::move(registration.tables);
  routing_ = std::move(registration.routing);
  return Status::Ok();
}

Status Client::Impl::Start() {
  ASSIGN_OR_RETURN(wake_receiver_, MakeSocket(*context_, SocketKind::kPull));
  ASSIGN_OR_RETURN(std::string wake, BindSocket(wake_receiver_, "inproc://ember-client-wake"));
  ASSIGN_OR_RETURN(wake_sender_, MakeSocket(*context_, SocketKind::kPush));
  RETURN_IF_ERROR(ConnectSocket(wake_sender_, wake));
  RETURN_IF_ERROR(links_.Connect(routing_));
  io_thread_ = std::thread([this] {
    SetThreadName("ps-client-io");
    IoLoop();
  });
  if (options_.heartbeat_interval.count() > 0 && !options_.read_only) {
    heartbeat_thread_ = std::thread([this] {
      SetThreadName("ps-client-beat");
      HeartbeatLoop();
    });
  }
  return Status::Ok();
}

void Client::Impl::HeartbeatLoop() {
  SilenceLog silence("trainer " + std::to_string(trainer_id_),
                     "the scheduler at " + options_.scheduler_endpoint);
  std::unique_lock lock(heartbeat_mutex_);
  while (!stopping_.load()) {
    lock.unlock();
    // A failed heartbeat needs no action here: the scheduler's verdict reaches the trainer
    // through its next clock report, and a restarting scheduler is waited for by the calls.
    silence.Record(scheduler_.Heartbeat(trainer_id_, options_.heartbeat_interval));
    lock.lock();
    heartbeat_wake_.wait_for(lock, options_.heartbeat_interval,
                             [this] { return stopping_.load(); });
  }
}

Ticket Client::Impl::Submit(std::shared_ptr<Operation> op) {
  if (options_.read_only && op->kind != Operation::Kind::kLookup) {
    return Ticket::Done(PermissionDenied(
        std::string(op->name()) + " of " + op->TableNames() + " from a read-only client " +
        "(registered as a reader): it may only look rows up; refused, nothing sent"));
  }
  if (op->key_count() == 0) return Ticket::Done(Status::Ok());
  op->deadline = Clock::now() + options_.request_timeout;
  Ticket ticket = op->ticket;
  std::lock_guard lock(submit_mutex_);
  if (stopping_.load()) return Ticket::Done(Aborted("client closed"));
  submissions_.push_back(std::move(op));
  // If the wake-up cannot be sent, the I/O thread still polls the queue on its idle timeout.
  (void)SendFrame(wake_sender_, Frame());
  return ticket;
}

// ---- Client ----

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Connect(ClientOptions options) {
  if (options.scheduler_endpoint.empty()) return InvalidArgument("client: no scheduler endpoint");
  if (options.max_keys_per_message > options.limits.keys_per_message) {
    return LimitExceeded(Limit::kKeysPerMessage, options.limits.keys_per_message,
                         "client: max_keys_per_message " +
                             std::to_string(options.max_keys_per_message) +
                             " (the servers refuse larger messages)");
  }
  auto impl = std::make_unique<Impl>(std::move(options));
  RETURN_IF_ERROR(impl->Register());
  RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

uint32_t Client::trainer_id() const { return impl_->trainer_id_; }
bool Client::read_only() const { return impl_->options_.read_only; }
uint64_t Client::start_clock() const { return impl_->start_clock_; }
const SyncOptions& Client::sync() const { return impl_->sync_; }
const std::vector<TableSpec>& Client::tables() const { return impl_->tables_; }
SchedulerClient& Client::scheduler() { return impl_->scheduler_; }
uint64_t Client::sender_id() const { return impl_->sender_id_; }
uint64_t Client::requests_resent() const { return impl_->resent_.load(std::memory_order_relaxed); }

Result<const TableSpec*> Client::FindTable(std::string_view name) const {
  for (const TableSpec& spec : impl_->tables_) {
    if (spec.name == name) return &spec;
  }
  return NotFound("unknown table '" + std::string(name) + "'");
}

RoutingTable Client::routing() const {
  std::lock_guard lock(impl_->routing_mutex_);
  return impl_->routing_;
}

Ticket Client::Pull(std::string_view table, std::span<const uint64_t> keys, std::span<float> out) {
  const TablePull one{table, keys, out};
  return Pull({&one, 1});
}

Ticket Client::Pull(std::span<const TablePull> tables) {
  auto op = Operation::NewPull(*this, tables);
  if (!op.ok()) return Ticket::Done(op.status());
  return impl_->Submit(std::move(*op));
}

Ticket Client::Lookup(std::string_view table, std::span<const uint64_t> keys, std::span<float> out,
                      MissingRows missing, std::span<uint8_t> found) {
  auto op = Operation::New(*this, Operation::Kind::kLookup, table, keys, out.size());
  if (!op.ok()) return Ticket::Done(op.status());
  if (found.size() != keys.size() && (missing == MissingRows::kFlag || !found.empty())) {
    return Ticket::Done(InvalidArgument(
        "lookup from '" + std::string(table) + "': " + std::to_string(keys.size()) + " keys need " +
        std::to_string(keys.size()) + " found flags, got " + std::to_string(found.size())));
  }
  (*op)->parts.front().rows = out;
  (*op)->found = found;
  (*op)->missing = missing;
  return impl_->Submit(std::move(*op));
}

Ticket Client::Push(std::string_view table, std::span<const uint64_t> keys,
                    std::span<const float> gradients, uint64_t clock, bool deferred,
                    uint64_t release_hint, float learning_rate) {
  if (!(learning_rate >= 0) || !std::isfinite(learning_rate)) {
    return Ticket::Done(InvalidArgument("push to '" + std::string(table) + "': learning rate " +
                                        std::to_string(learning_rate) +
                                        " (must be finite and >= 0; 0: the table's)"));
  }
  auto op = Operation::New(*this, Operation::Kind::kPush, table, keys, gradients.size());
  if (!op.ok()) return Ticket::Done(op.status());
  (*op)->learning_rate = learning_rate;
  (*op)->gradients = gradients;
  (*op)->clock = clock;
  (*op)->deferred = deferred;
  (*op)->hint = release_hint;
  return impl_->Submit(std::move(*op));
}

Ticket Client::Hint(std::string_view table, std::span<const uint64_t> keys, uint64_t hint,
                    Millis lifetime) {
  if (hint == 0) return Ticket::Done(InvalidArgument("a hint's id must not be 0"));
  auto op = Operation::New(*this, Operation::Kind::kHint, table, keys, 0);
  if (!op.ok()) return Ticket::Done(op.status());
  (*op)->owned_keys.assign(keys.begin(), keys.end());
  (*op)->parts.front().keys = (*op)->owned_keys;
  (*op)->hint = hint;
  (*op)->hint_ttl_ms = static_cast<uint32_t>(
      std::clamp<int64_t>(lifetime.count(), 1, std::numeric_limits<uint32_t>::max()));
  return impl_->Submit(std::move(*op));
}

}  // namespace ember::ps
