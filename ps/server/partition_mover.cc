// PartitionMover implementation.
#include "ps/server/partition_mover.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

namespace ember::ps {
namespace {

constexpr uint32_t kAnyServer = UINT32_MAX;
// A hand-over refused while the source holds bsp pushes of the partition is asked again this
// often, this many times (a bsp step leaves a gap between its apply and the next pushes).
constexpr Millis kHandoverRetry{2};
constexpr int kHandoverAttempts = 5000;
// A copy the source refused as unplanned ("retry": it may not have applied the scheduler's answer
// naming the move yet) is asked again this often, this many times.
constexpr Millis kCopyRetry{20};
constexpr int kCopyAttempts = 50;
// How long a drained server keeps answering before it stops.
constexpr Millis kDrainedGrace{2000};
// A commit with no answer is asked again after this pause.
constexpr Millis kCommitRetry{200};

}  // namespace

PartitionMover::PartitionMover(ShardService& service, Context& context,
                               MoverOptions options, std::function<void()> on_exit)
    : service_(service),
      context_(context),
      options_(std::move(options)),
      on_exit_(std::move(on_exit)),
      scheduler_(context, options_.scheduler_endpoint, context.security().scheduler_key),
      scheduler_silence_("server " + std::to_string(service.server_id()),
                         "the scheduler at " + options_.scheduler_endpoint) {
  scheduler_.EnableHeartbeats();  // a scheduler restarted elsewhere is found again
}

void PartitionMover::Pause(Millis duration, const std::atomic<bool>& stop) {
  const auto until = std::chrono::steady_clock::now() + duration;
  while (!stop.load() && std::chrono::steady_clock::now() < until) {
    if (service_.TakeHeartbeatRequest()) return;  // a move's end to check with the scheduler
    std::this_thread::sleep_for(std::min<Millis>(duration, Millis(20)));
  }
}

Result<wire::ServerOrders> PartitionMover::Heartbeat() {
  const auto asked_at = std::chrono::steady_clock::now();
  last_heartbeat_ = asked_at;
  auto orders = CallAndCheck<wire::ServerOrders>(
      scheduler_, "heartbeat", options_.heartbeat_interval * 5,
      [&](const wire::RequestHeader& header) {
        return wire::EncodeServerHeartbeat(header, service_.server_id());
      });
  scheduler_silence_.Record(orders.status());
  if (orders.ok()) service_.ApplyOrders(*orders, asked_at);
  return orders;
}

void PartitionMover::HeartbeatIfDue() {
  if (std::chrono::steady_clock::now() - last_heartbeat_ >= options_.heartbeat_interval) {
    (void)Heartbeat();  // its move orders are the ones under way, or wait for the next loop
  }
}

void PartitionMover::Run(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    auto orders = Heartbeat();
    if (orders.ok()) {
      for (const wire::MoveOrder& move : orders->moves) {
        if (stop.load()) break;
        Status moved = RunMove(move, orders->routing);
        if (!moved.ok()) {
          spdlog::warn("server {}: move of partition {} from server {} failed: {}",
                       service_.server_id(), move.partition, move.from, moved.ToString());
        }
      }
      if (orders->exit) {
        // Clients with an old routing table still reach it for a moment: they get "not my
        // partition" and ask the scheduler, instead of finding nobody.
        spdlog::info("server {}: drained; stopping in {} ms", service_.server_id(),
                     kDrainedGrace.count());
        Pause(kDrainedGrace, stop);
        on_exit_();
        return;
      }
    }
    ResolveLongHolds();
    Pause(options_.heartbeat_interval, stop);
  }
}

Result<RoutingTable> PartitionMover::Decide(const wire::MoveOrder& move, bool commit,
                                            const std::string& reason) {
  return CallAndCheck<RoutingTable>(
      scheduler_, commit ? "committing a move" : "aborting a move", Millis(10'000),
      [&](const wire::RequestHeader& header) {
        return wire::EncodeMoveDecision(header, {move, commit, reason});
      });
}

Result<RoutingTable> PartitionMover::Commit(const wire::MoveOrder& move) {
  const auto deadline = std::chrono::steady_clock::now() + options_.transfer_timeout;
  for (;;) {
    auto committed = Decide(move, true, "");
    if (!IsSilence(committed.status()) || std::chrono::steady_clock::now() >= deadline) {
      return committed;
    }
    spdlog::warn("server {}: no answer to the commit of partition {}: {}; asking again",
                 service_.server_id(), move.partition, committed.status().ToString());
    std::this_thread::sleep_for(kCommitRetry);
  }
}

Status PartitionMover::RunMove(const wire::MoveOrder& move, const RoutingTable& routing) {
  if (move.from >= routing.servers.size()) {
    return InvalidArgument("move from unknown server " + std::to_string(move.from));
  }
  RpcChannel source(context_, routing.servers[move.from].endpoint,
                    routing.servers[move.from].public_key);
  auto transfer = [&](wire::TransferPhase phase,
                      uint64_t offset) -> Result<wire::DecodedResponse> {
    const uint64_t id = source.NextRequestId();
    ASSIGN_OR_RETURN(auto reply, source.Call(id,
                                             wire::EncodePartitionTransfer(
                                                 {id, 0}, {move.partition, phase, offset}),
                                             options_.transfer_timeout));
    if (!reply.status.ok()) return reply.status;
    return reply;
  };
  // Loads the phase's rows chunk by chunk, each request naming the offset the last reply gave.
  auto load = [&](wire::TransferPhase phase) -> Status {
    uint64_t offset = 0;
    do {
      ASSIGN_OR_RETURN(auto reply, transfer(phase, offset));
      auto* data = std::get_if<wire::PartitionData>(&reply.body);
      if (data == nullptr) return Internal("partition transfer answered without rows");
      ASSIGN_OR_RETURN(const uint64_t next,
                       service_.LoadIncoming(move.partition, data->bytes,
                                             phase == wire::TransferPhase::kCopy && offset == 0));
      if (next != 0 && next <= offset) {
        return DataLoss("partition transfer of partition " + std::to_string(move.partition) +
                        " went from offset " + std::to_string(offset) + " back to " +
                        std::to_string(next));
      }
      offset = next;
      HeartbeatIfDue();  // a long move must not look like a dead server
      if (phase == wire::TransferPhase::kCopy && options_.bandwidth_bytes_per_second > 0) {
        const double seconds =
            static_cast<double>(data->bytes.size()) / options_.bandwidth_bytes_per_second;
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      }
    } while (offset != 0);
    return Status::Ok();
  };
  // The source learnt the move before this server did, but may not have applied the answer yet.
  Status moved = load(wire::TransferPhase::kCopy);
  for (int attempt = 0; moved.code() == StatusCode::kUnavailable && attempt < kCopyAttempts;
       ++attempt) {
    std::this_thread::sleep_for(kCopyRetry);
    moved = load(wire::TransferPhase::kCopy);
  }
  // A bsp source hands over between clocks only: "retry" while it holds pushes of the partition.
  for (int attempt = 0; moved.ok(); ++attempt) {
    moved = load(wire::TransferPhase::kHandover);
    if (moved.code() != StatusCode::kUnavailable || attempt >= kHandoverAttempts) break;
    std::this_thread::sleep_for(kHandoverRetry);
    HeartbeatIfDue();
    moved = Status::Ok();
  }
  // With a data directory the rows are on disk before the move commits: a target killed right
  // after the commit comes back with them.
  if (moved.ok()) moved = service_.Flush();
  if (moved.ok()) {
    auto committed = Commit(move);
    if (committed.ok()) {
      service_.Adopt(move.partition, committed->epoch);
      (void)transfer(wire::TransferPhase::kRelease, 0);  // the source also learns it by itself
      return Status::Ok();
    }
    moved = committed.status();
  }
  // Not committed: nobody but the source serves the partition.
  service_.Discard(move.partition);
  (void)Decide(move, false, moved.ToString());
  (void)transfer(wire::TransferPhase::kResume, 0);
  return moved;
}

void PartitionMover::ResolveLongHolds() {
  for (uint32_t partition :
       service_.StalledMovesOut(options_.transfer_timeout * 2, options_.handover_timeout)) {
    auto routing = Decide({partition, service_.server_id(), kAnyServer}, false,
                          "the move out stalled (its target may be gone)");
    if (!routing.ok()) continue;  // asked again at the next heartbeat
    if (partition < routing->owners.size() && routing->owners[partition] == service_.server_id()) {
      spdlog::warn("server {}: the move of partition {} was abandoned; serving it again",
                   service_.server_id(), partition);
      service_.Resume(partition);
    } else {
      service_.Release(partition);
    }
  }
}

}  // namespace ember::ps
