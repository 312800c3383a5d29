// SchedulerClient implementation: a pool of connections, and each call as one CallAndCheck.
#include "ps/client/scheduler_client.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "common/rpc_channel.h"
#include "common/silence_log.h"
#include "common/transport.h"

namespace ember::ps {
namespace {

// How long one registration attempt waits before asking again.
constexpr Millis kRegisterRetry{1000};
// How long a call waits for its answer before it sends the request again: a scheduler restarted
// meanwhile never saw it.
constexpr Millis kResendEvery{2000};
// The pause before sending again after an attempt that failed at once.
constexpr Millis kResendPause{100};

}  // namespace

// Idle connections to the scheduler; a call takes one (or opens one) and gives it back after.
class SchedulerClient::Channels {
 public:
  Channels(const std::string& endpoint, std::shared_ptr<Context> context)
      : context_(std::move(context)), endpoint_(endpoint) {}

  std::unique_ptr<RpcChannel> Take() {
    std::lock_guard lock(mutex_);
    if (idle_.empty()) {
      auto channel =
          std::make_unique<RpcChannel>(*context_, endpoint_, context_->security().scheduler_key);
      channel->EnableHeartbeats();  // a scheduler restarted elsewhere is found again
      return channel;
    }
    std::unique_ptr<RpcChannel> channel = std::move(idle_.back());
    idle_.pop_back();
    return channel;
  }
  // The context was shut down (the client closes): nothing is sent any more.
  bool shut_down() const { return context_->shut_down(); }
  void Give(std::unique_ptr<RpcChannel> channel) {
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(channel));
  }

 private:
  const std::shared_ptr<Context> context_;  // outlives the sockets below
  const std::string endpoint_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<RpcChannel>> idle_;  // guarded by mutex_
};

SchedulerClient::SchedulerClient(std::string endpoint, TransportSecurity security)
    : SchedulerClient(std::move(endpoint), std::make_shared<Context>(1, std::move(security))) {}

SchedulerClient::SchedulerClient(std::string endpoint, std::shared_ptr<Context> context)
    : endpoint_(std::move(endpoint)),
      channels_(std::make_unique<Channels>(endpoint_, std::move(context))) {}

SchedulerClient::~SchedulerClient() = default;

template <typename Body, typename Encode>
Result<Body> SchedulerClient::Call(std::string_view what, Millis timeout, Encode&& encode) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  // One connection for every attempt: the scheduler knows a barrier's participant by it.
  std::unique_ptr<RpcChannel> channel = channels_->Take();
  Result<Body> result = Unavailable("never sent");
  for (;;) {
    const auto sent = Clock::now();
    const Millis left = std::chrono::ceil<Millis>(deadline - sent);
    if (left.count() <= 0) break;
    result = CallAndCheck<Body>(*channel, what, std::min(left, kResendEvery), encode);
    if (!IsSilence(result.status()) || channels_->shut_down()) break;
    if (Clock::now() - sent < kResendPause) std::this_thread::sleep_for(kResendPause);
  }
  channels_->Give(std::move(channel));
  if (IsSilence(result.status()) && Clock::now() >= deadline &&
      !channels_->shut_down()) {
    return DeadlineExceeded(std::string(what) + ": no answer from the scheduler at " + endpoint_ +
                            " within " + std::to_string(timeout.count()) + " ms (last: " +
                            result.status().ToString() + ")");
  }
  return result;
}

// ---- Membership ----

Result<TrainerRegistration> SchedulerClient::RegisterTrainer(std::string_view name,
                                                             Millis timeout) {
  return Register(name, /*reader=*/false, timeout);
}

Result<TrainerRegistration> SchedulerClient::RegisterReader(std::string_view name,
                                                            Millis timeout) {
  return Register(name, /*reader=*/true, timeout);
}

Result<TrainerRegistration> SchedulerClient::Register(std::string_view name, bool reader,
                                                      Millis timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  Status last = Unavailable("never tried");
  while (Clock::now() < deadline) {
    const Millis left = std::chrono::ceil<Millis>(deadline - Clock::now());
    auto registration =
        Call<wire::Registration>("registering with the scheduler", std::min(left, kRegisterRetry),
                                 [&](const wire::RequestHeader& header) {
                                   return reader ? wire::EncodeRegisterReader(header, name)
                                                 : wire::EncodeRegisterTrainer(header, name);
                                 });
    if (registration.ok()) {
      if (!registration->routing.ready()) {
        return Internal("scheduler answered a registration without a ready routing table");
      }
      return TrainerRegistration{registration->id, registration->clock,
                                 std::move(registration->tables), std::move(registration->routing),
                                 registration->sync};
    }
    // Not reachable or no answer (the cluster still forming): ask again.
    const StatusCode code = registration.status().code();
    if (code != StatusCode::kUnavailable && code != StatusCode::kDeadlineExceeded) {
      return registration.status();
    }
    last = registration.status();
  }
  return DeadlineExceeded("no registration from scheduler " + endpoint_ + " within " +
                          std::to_string(timeout.count()) + " ms (last: " + last.ToString() + ")");
}

Result<RoutingTable> SchedulerClient::GetRouting(Millis timeout) {
  ASSIGN_OR_RETURN(RoutingTable routing,
                   Call<RoutingTable>("asking the scheduler for the routing table", timeout,
                                      [](const wire::RequestHeader& header) {
                                        return wire::EncodeGetRouting(header);
                                      }));
  if (!routing.ready()) return Unavailable("scheduler has no routing table");
  return routing;
}

Result<ClusterStatus> SchedulerClient::GetClusterStatus(Millis timeout) {
  return Call<ClusterStatus>(
      "asking the scheduler for the cluster's status", timeout,
      [](const wire::RequestHeader& header) { return wire::EncodeClusterStatusRequest(header); });
}

Status SchedulerClient::Drain(uint32_t server, Millis timeout) {
  return Call<wire::NoPayload>(
             "draining server " + std::to_string(server), timeout,
             [&](const wire::RequestHeader& header) { return wire::EncodeDrain(header, server); })
      .status();
}

// ---- Clocks ----

Result<ClockGrant> SchedulerClient::ReportClock(uint32_t trainer, uint64_t clock, Millis timeout) {
  return Call<ClockGrant>("waiting for the other trainers after clock " + std::to_string(clock),
                          timeout, [&](const wire::RequestHeader& header) {
                            return wire::EncodeTrainerClock(header, {trainer, clock, false});
                          });
}

Status SchedulerClient::Leave(uint32_t trainer, uint64_t clock, Millis timeout) {
  return Call<wire::NoPayload>("leaving after clock " + std::to_string(clock), timeout,
                               [&](const wire::RequestHeader& header) {
                                 return wire::EncodeTrainerClock(header, {trainer, clock, true});
                               })
      .status();
}

Status SchedulerClient::Heartbeat(uint32_t trainer, Millis timeout) {
  return Call<wire::NoPayload>("heartbeat of trainer " + std::to_string(trainer), timeout,
                               [&](const wire::RequestHeader& header) {
                                 return wire::EncodeHeartbeat(header, trainer);
                               })
      .status();
}

// ---- Checkpoint cuts ----

Result<CutInfo> SchedulerClient::ArriveAtCut(uint32_t trainer, uint64_t clock, Millis timeout) {
  return Call<CutInfo>(
      "waiting for the other trainers at the checkpoint cut after clock " + std::to_string(clock),
      timeout, [&](const wire::RequestHeader& header) {
        return wire::EncodeCheckpointCut(header, {trainer, clock, false, ""});
      });
}

Status SchedulerClient::FinishCut(uint32_t trainer, uint64_t clock, const Status& outcome,
                                  Millis timeout) {
  const std::string error = outcome.ok() ? "" : outcome.ToString();
  return Call<wire::NoPayload>(
             "finishing the checkpoint cut after clock " + std::to_string(clock), timeout,
             [&](const wire::RequestHeader& header) {
               return wire::EncodeCheckpointCut(header, {trainer, clock, true, error});
             })
      .status();
}

Result<CutInfo> SchedulerClient::CheckpointNow(const CutRequest& now, Millis timeout) {
  return Call<CutInfo>("asking for a checkpoint into '" + now.dir + "'", timeout,
                       [&](const wire::RequestHeader& header) {
                         return wire::EncodeCheckpointNow(header, wire::CheckpointNowRequest{now});
                       });
}

// ---- Barriers ----

Status SchedulerClient::Barrier(std::string_view name, uint32_t count, Millis timeout) {
  return Call<wire::NoPayload>("barrier '" + std::string(name) + "'", timeout,
                               [&](const wire::RequestHeader& header) {
                                 return wire::EncodeBarrier(header, name, count);
                               })
      .status();
}

}  // namespace ember::ps
