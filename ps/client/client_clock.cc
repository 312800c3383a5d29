// Client: the calls of synchronised (bsp/ssp) runs (clocks, leaving, applying a clock, heartbeats)
// and the other calls that go to every server at once (checkpoints).
#include <future>

#include "ps/client/client.h"

namespace ember::ps {

Result<wire::ClockGrant> Client::ReportClock(uint64_t clock, Millis timeout) {
  std::lock_guard lock(control_mutex_);
  const uint64_t id = control_channel_->NextRequestId();
  auto reply = control_channel_->Call(
      id, wire::EncodeTrainerClock({id, 0}, {trainer_id_, clock, false}), timeout);
  if (!reply.ok()) {
    return reply.status().WithContext("waiting for the other trainers after clock " +
                                      std::to_string(clock));
  }
  if (!reply->status.ok()) return reply->status;
  auto* grant = std::get_if<wire::ClockGrant>(&reply->body);
  if (grant == nullptr) return Internal("the scheduler answered a clock report without a grant");
  return std::move(*grant);
}

Status Client::Leave(uint64_t clock, Millis timeout) {
  std::lock_guard lock(control_mutex_);
  const uint64_t id = control_channel_->NextRequestId();
  ASSIGN_OR_RETURN(auto reply,
                   control_channel_->Call(
                       id, wire::EncodeTrainerClock({id, 0}, {trainer_id_, clock, true}), timeout));
  return reply.status;
}

Result<wire::CutInfo> Client::ArriveAtCut(uint64_t clock, Millis timeout) {
  std::lock_guard lock(control_mutex_);
  const uint64_t id = control_channel_->NextRequestId();
  auto reply = control_channel_->Call(
      id, wire::EncodeCheckpointCut({id, 0}, {trainer_id_, clock, false, ""}), timeout);
  if (!reply.ok()) {
    return reply.status().WithContext("waiting for the other trainers at the checkpoint cut "
                                      "after clock " + std::to_string(clock));
  }
  if (!reply->status.ok()) return reply->status;
  auto* cut = std::get_if<wire::CutInfo>(&reply->body);
  if (cut == nullptr) return Internal("the scheduler answered a cut arrival without the cut");
  return std::move(*cut);
}

Status Client::FinishCut(uint64_t clock, const Status& outcome, Millis timeout) {
  std::lock_guard lock(control_mutex_);
  const uint64_t id = control_channel_->NextRequestId();
  const std::string error = outcome.ok() ? "" : outcome.ToString();
  ASSIGN_OR_RETURN(auto reply, control_channel_->Call(
                                   id,
                                   wire::EncodeCheckpointCut({id, 0},
                                                             {trainer_id_, clock, true, error}),
                                   timeout));
  return reply.status;
}

Status Client::ApplyClock(const wire::ApplyClockRequest& apply, Millis timeout) {
  return CallEveryServer(
      [&apply](const wire::RequestHeader& header) { return wire::EncodeApplyClock(header, apply); },
      "applying clock " + std::to_string(apply.clock), timeout);
}

Status Client::Checkpoint(const wire::CheckpointRequest& checkpoint, Millis timeout) {
  return CallEveryServer(
      [&checkpoint](const wire::RequestHeader& header) {
        return wire::EncodeCheckpoint(header, checkpoint);
      },
      "checkpoint '" + checkpoint.dir + "'",
      timeout);
}

Status Client::CallEveryServer(
    const std::function<Frame(const wire::RequestHeader&)>& encode,
    const std::string& what, Millis timeout) {
  std::lock_guard lock(control_mutex_);
  const RoutingTable current = routing();
  apply_channels_.resize(current.servers.size());
  std::vector<std::future<Status>> calls;
  for (const ServerInfo& server : current.servers) {
    auto& channel = apply_channels_[server.id];
    if (!channel || channel->endpoint() != server.endpoint) {
      channel = std::make_unique<RpcChannel>(context_, server.endpoint);
    }
    calls.push_back(std::async(std::launch::async, [&channel, &encode, &what, &current, timeout] {
      const uint64_t id = channel->NextRequestId();
      auto reply = channel->Call(id, encode({id, current.epoch}), timeout);
      Status status = reply.ok() ? reply->status : reply.status();
      return status.WithContext(what + " on " + channel->endpoint());
    }));
  }
  Status first;
  for (auto& call : calls) {
    Status status = call.get();
    if (first.ok() && !status.ok()) first = status;
  }
  return first;
}

void Client::HeartbeatLoop() {
  RpcChannel channel(context_, options_.scheduler_endpoint);
  std::unique_lock lock(heartbeat_mutex_);
  while (!stopping_.load()) {
    lock.unlock();
    const uint64_t id = channel.NextRequestId();
    // A failed heartbeat needs no action here: the scheduler's verdict reaches the trainer
    // through its next clock report.
    (void)channel.Call(id, wire::EncodeHeartbeat({id, 0}, trainer_id_),
                       options_.heartbeat_interval);
    lock.lock();
    heartbeat_wake_.wait_for(lock, options_.heartbeat_interval, [this] { return stopping_.load(); });
  }
}

}  // namespace ember::ps
