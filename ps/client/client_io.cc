// Client: the I/O thread. It owns every server connection; it sends the pieces of pulls and
// pushes, matches replies to them by request id, retries what a server asked to retry, resends
// what was in flight to a server whose connection came back, and fails what passed its deadline.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "ps/client/client_internal.h"
#include "ps/client/key_split.h"

namespace ember::ps {
namespace {

using Clock = std::chrono::steady_clock;
constexpr Millis kIdlePoll{100};
// Wait before resending keys a server asked to retry.
constexpr Millis kRetryDelay{5};

}  // namespace

Status Client::Impl::RefreshRouting() {
  ASSIGN_OR_RETURN(RoutingTable fresh, scheduler_.GetRouting(options_.request_timeout));
  {
    std::lock_guard lock(routing_mutex_);
    if (fresh.epoch > routing_.epoch) routing_ = std::move(fresh);
  }
  return links_.Connect(routing_);  // only this thread writes routing_
}

void Client::Impl::IoLoop() {
  Poller poller;
  while (!stopping_.load(std::memory_order_relaxed)) {
    // The wake socket (index 0), then each server's socket and its monitor.
    poller.Clear();
    poller.Add(wake_receiver_);
    links_.AddTo(poller);
    const size_t polled_links = links_.size();
    Status polled = poller.Wait(retries_.empty() ? kIdlePoll : kRetryDelay);
    if (!polled.ok()) {
      if (stopping_.load(std::memory_order_relaxed)) break;  // the context was shut down
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
          auto frames = ReceiveFrames(links_.socket(s), Millis(0));
          if (!frames.ok() || frames->empty()) break;
          OnReply(std::move(frames->back()));
        }
      }
      if (poller.Readable(2 + 2 * s)) OnLinkEvents(s);
    }
    SendDueRetries();
    ExpireDeadlines();
    every_server_calls_.ExpireDeadlines(
        [this](std::vector<uint32_t> servers) { return links_.Name(std::move(servers)); });
  }
}

void Client::Impl::SendDueRetries() {
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

void Client::Impl::OnLinkEvents(uint32_t server) {
  while (const std::optional<ServerLinks::Change> change = links_.NextChange(server)) {
    if (*change == ServerLinks::Change::kBack) {
      Resend(server);
      continue;
    }
    // A server that holds no partition any more (drained) is not coming back for them: what was
    // in flight to it goes to the new owners, and its part of a call to every server is done.
    if (RefreshRouting().ok() && routing_.PartitionsOwnedBy(server) == 0) {
      spdlog::info(
          "client: server {} ({}) left; sending what was in flight to it to the "
          "partitions' new owners",
          server, links_.endpoint(server));
      RerouteInFlight(server);
      every_server_calls_.OnServerLeft(server);
      continue;
    }
    spdlog::warn(
        "client: lost the connection to server {} ({}); what is in flight to it will "
        "be sent again once it is back",
        server, links_.endpoint(server));
  }
}

void Client::Impl::RerouteInFlight(uint32_t server) {
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

void Client::Impl::Resend(uint32_t server) {
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
    Status sent = SendFrames(links_.socket(server), frames);
    if (!sent.ok()) {
      Fail(op, sent.WithContext("sending again to server " + std::to_string(server)));
      continue;
    }
    resent_.fetch_add(1, std::memory_order_relaxed);
  }
  spdlog::info("client: server {} ({}) is back; sent the {} requests in flight to it again", server,
               links_.endpoint(server), lost.size());
}

void Client::Impl::DrainSubmissions() {
  std::deque<std::shared_ptr<Operation>> batch;
  std::deque<std::shared_ptr<EveryServerCalls::Call>> calls;
  {
    std::lock_guard lock(submit_mutex_);
    batch.swap(submissions_);
    calls.swap(call_submissions_);
  }
  for (auto& op : batch) {
    active_.push_back(op);
    Dispatch(op, {});
  }
  const auto send = [this](uint32_t server, Frame frame) {
    return server < links_.size() ? SendFrame(links_.socket(server), std::move(frame))
                                  : Unavailable("no connection");
  };
  for (auto& call : calls) every_server_calls_.Start(call, routing_, next_request_id_, send);
}

void Client::Impl::Dispatch(const std::shared_ptr<Operation>& op,
                            std::span<const uint32_t> positions) {
  // Only this thread writes routing_.
  std::vector<std::vector<uint32_t>> by_server = SplitByServer(*op, routing_, positions);
  const size_t max_keys = std::max<uint32_t>(options_.max_keys_per_message, 1);
  for (uint32_t server = 0; server < by_server.size(); ++server) {
    std::vector<uint32_t>& share = by_server[server];
    if (share.size() <= max_keys) {  // one message: the share itself
      if (!share.empty() && !Send(op, server, next_request_id_++, std::move(share))) return;
      continue;
    }
    for (size_t first = 0; first < share.size(); first += max_keys) {
      std::vector<uint32_t> subset(share.begin() + first,
                                   share.begin() + std::min(share.size(), first + max_keys));
      if (!Send(op, server, next_request_id_++, std::move(subset))) return;
    }
  }
}

Frame Client::Impl::EncodePull(const Operation& op, const wire::RequestHeader& header,
                               std::span<const uint32_t> positions) const {
  if (positions.empty()) {  // every key of every table
    std::vector<wire::KeysToSend> tables;
    for (const Operation::Part& part : op.parts) tables.push_back({part.table->name, part.keys, {}});
    return wire::EncodePullTables(header, tables, options_.row_format);
  }
  // Positions ascend: each table's are a run of them, numbered from the part's first key.
  std::vector<wire::KeysToSend> tables;
  std::vector<uint32_t> in_part(positions.size());
  size_t run = 0;
  while (run < positions.size()) {
    const Operation::Part& part = op.PartOf(positions[run]);
    size_t end = run;
    while (end < positions.size() && &op.PartOf(positions[end]) == &part) {
      in_part[end] = positions[end] - part.first;
      ++end;
    }
    tables.push_back({part.table->name, part.keys,
                      std::span<const uint32_t>(in_part).subspan(run, end - run)});
    run = end;
  }
  return wire::EncodePullTables(header, tables, options_.row_format);
}

Frame Client::Impl::Encode(const Operation& op, uint64_t request_id,
                           std::span<const uint32_t> positions) const {
  const wire::RequestHeader header{request_id, routing_.epoch};
  if (op.kind == Operation::Kind::kPull) return EncodePull(op, header, positions);
  const Operation::Part& part = op.parts.front();  // the other kinds are of one table
  if (op.kind == Operation::Kind::kLookup) {
    return wire::EncodeLookupSubset(header, part.table->name, part.keys, positions,
                                    options_.row_format, op.missing);
  }
  if (op.kind == Operation::Kind::kHint) {
    return wire::EncodeHintSubset(header, part.table->name, part.keys, positions,
                                  wire::HintId{op.hint, sender_id_}, op.hint_ttl_ms);
  }
  // Every request below the lowest one in flight was answered.
  const uint64_t lowest =
      in_flight_.empty() ? request_id : std::min(request_id, in_flight_.begin()->first);
  return wire::EncodePushSubset(header, part.table->name, part.keys, op.gradients,
                                part.table->dim, positions, op.clock, options_.row_format, trainer_id_, op.deferred,
                                wire::PushSender{sender_id_, lowest}, op.hint, op.learning_rate);
}

bool Client::Impl::Send(const std::shared_ptr<Operation>& op, uint32_t server, uint64_t request_id,
                        std::vector<uint32_t> positions) {
  std::vector<Frame> frames;
  frames.push_back(Encode(*op, request_id, positions));
  Status sent = SendFrames(links_.socket(server), frames);
  if (!sent.ok()) {
    Fail(op, sent.WithContext("sending to server " + std::to_string(server)));
    return false;
  }
  ++op->outstanding;
  in_flight_.emplace(request_id, InFlight{op, server, std::move(positions), links_.down(server)});
  return true;
}

void Client::Impl::OnReply(Frame payload) {
  auto response = wire::DecodeResponse(std::move(payload));
  if (!response.ok()) {
    spdlog::warn("client: dropping an undecodable reply: {}", response.status().ToString());
    return;
  }
  if (auto it = in_flight_.find(response->request_id); it != in_flight_.end()) {
    InFlight entry = std::move(it->second);
    in_flight_.erase(it);
    OnOperationReply(std::move(entry), std::move(response).value());
    return;
  }
  // Else one to a call to every server, or a late reply to a request that already failed.
  (void)every_server_calls_.OnReply(response->request_id, *response,
                                    [this](uint32_t server) { return links_.endpoint(server); });
}

void Client::Impl::OnOperationReply(InFlight entry, wire::DecodedResponse response) {
  const std::shared_ptr<Operation>& op = entry.op;
  --op->outstanding;

  if (response.status.code() == StatusCode::kFailedPrecondition &&
      op->routing_retries < options_.max_routing_retries) {
    // The server does not own (some of) these keys any more: refresh and resend just them.
    ++op->routing_retries;
    Status refreshed = RefreshRouting();
    if (!refreshed.ok()) {
      Fail(op, refreshed.WithContext("refreshing routing after: " +
                                     std::string(response.status.message())));
      return;
    }
    Dispatch(op, entry.positions);
    return;
  }
  if (response.status.code() == StatusCode::kUnavailable &&
      Clock::now() + kRetryDelay < op->deadline) {
    // Held for a moment (a partition moving): send these keys again shortly, routed afresh.
    ++op->outstanding;
    retries_.push_back(Retry{Clock::now() + kRetryDelay, op, std::move(entry.positions)});
    return;
  }
  if (!response.status.ok()) {
    Fail(op, response.status.WithContext("server " + std::to_string(entry.server) + " (" +
                                         links_.endpoint(entry.server) + ")"));
    return;
  }
  if (op->kind == Operation::Kind::kPull || op->kind == Operation::Kind::kLookup) {
    if (Status taken = op->TakeRows(entry.server, entry.positions, response.body); !taken.ok()) {
      Fail(op, std::move(taken));
      return;
    }
  }
  if (op->outstanding == 0 && !op->finished) {
    op->finished = true;
    op->ticket.Complete(Status::Ok());
    std::erase(active_, op);
  }
}

void Client::Impl::Fail(const std::shared_ptr<Operation>& op, Status status) {
  if (op->finished) return;
  op->finished = true;
  // Forget its other sub-requests so late replies never touch the caller's buffers.
  std::erase_if(in_flight_, [&](const auto& entry) { return entry.second.op == op; });
  op->ticket.Complete(std::move(status));
  std::erase(active_, op);
}

void Client::Impl::ExpireDeadlines() {
  const auto now = Clock::now();
  std::vector<std::shared_ptr<Operation>> expired;
  for (auto& op : active_) {
    if (now >= op->deadline) expired.push_back(op);
  }
  for (auto& op : expired) {
    std::vector<uint32_t> silent;
    for (const auto& [id, entry] : in_flight_) {
      if (entry.op == op) silent.push_back(entry.server);
    }
    Fail(op, DeadlineExceeded(std::string(op->name()) + " of " + std::to_string(op->key_count()) +
                              " keys from " + op->TableNames() + " not answered within " +
                              std::to_string(options_.request_timeout.count()) + " ms by " +
                              links_.Name(std::move(silent))));
  }
}

}  // namespace ember::ps
