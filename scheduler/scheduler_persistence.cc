// Scheduler: its state in the data directory (scheduler_state.h): saved before answers leave,
// restored at start.
#include <spdlog/spdlog.h>

#include <chrono>

#include "common/file_io.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_state.h"

namespace ember::scheduler {
namespace {

// A bind address with a wildcard port ("tcp://host:*" or port 0): a restart may take the port
// it had before.
bool HasWildcardPort(const std::string& bind) {
  return bind.ends_with(":*") || bind.ends_with(":0");
}

}  // namespace

SchedulerState Scheduler::CurrentState() const {
  SchedulerState state;
  state.endpoint = endpoint_;
  state.num_partitions = options_.num_partitions;
  state.tables_fingerprint = TablesFingerprint(options_.tables);
  state.servers = servers_;
  state.epoch = routing_.epoch;
  state.owners = routing_.owners;
  state.moves = moves_.Save();
  for (const auto& [name, id] : trainer_ids_) {
    auto key = trainer_keys_.find(id);
    state.trainers.push_back({name, id, key == trainer_keys_.end() ? "" : key->second});
  }
  state.clocks = clocks_.Save();
  state.cuts = cuts_.Save();
  state.cut_coordinator = cut_coordinator_;
  state.cuts_completed = cuts_completed_;
  state.cuts_failed = cuts_failed_;
  state.last_cut_clock = last_cut_clock_;
  state.last_cut_error = last_cut_outcome_.ok() ? "" : last_cut_outcome_.ToString();
  return state;
}

void Scheduler::SendReplies() {
  if (!options_.data_dir.empty() && failure_.ok() && !endpoint_.empty()) {
    // Clocks change at every step and are not worth a write of their own: a restarted scheduler
    // takes the clocks saved with the last other change as stale (TrainerClocks::Restore) until
    // the trainers report again. Anything else is on disk before the answers leave.
    const SchedulerState state = CurrentState();
    std::string structure = EncodeSchedulerState(state, /*with_clocks=*/false);
    if (structure != saved_structure_) {
      std::string payload = EncodeSchedulerState(state);
      Status saved = SaveSchedulerState(options_.data_dir, payload, Flush::kNow);
      if (!saved.ok()) {
        failure_ = saved.WithContext("scheduler: saving its state");
        spdlog::error("{}; stopping without answering {} requests (they are asked again of the "
                      "scheduler started after it)",
                      failure_.ToString(), outbox_.size());
        outbox_.clear();
        RequestStop();
        return;
      }
      saved_structure_ = std::move(structure);
    }
  }
  for (auto& [identity, payload] : outbox_) {
    std::vector<Frame> frames;
    frames.push_back(std::move(identity));
    frames.push_back(std::move(payload));
    Status sent = SendFrames(socket_, frames);
    if (!sent.ok()) spdlog::warn("scheduler: reply dropped: {}", sent.ToString());
  }
  outbox_.clear();
}

Result<std::string> Scheduler::RestoreState() {
  if (options_.data_dir.empty()) return options_.bind;
  RETURN_IF_ERROR(MakeDirectories(options_.data_dir).WithContext("scheduler: --data-dir"));
  ASSIGN_OR_RETURN(std::optional<SchedulerState> saved, LoadSchedulerState(options_.data_dir));
  if (!saved) {
    spdlog::info("scheduler: no saved state in {}: a new cluster", options_.data_dir);
    return options_.bind;
  }
  if (saved->num_partitions != options_.num_partitions ||
      saved->tables_fingerprint != TablesFingerprint(options_.tables)) {
    return FailedPrecondition("scheduler: the state in " + SchedulerStatePath(options_.data_dir) +
                              " is of a cluster with other partitions or tables (" +
                              std::to_string(saved->num_partitions) + " partitions); start it " +
                              "with that job's config, or with an empty --data-dir");
  }
  const auto now = std::chrono::steady_clock::now();
  servers_ = saved->servers;
  routing_.epoch = saved->epoch;
  routing_.owners = saved->owners;
  if (saved->epoch > 0) routing_.servers = servers_;
  moves_.Restore(saved->moves, routing_, now);
  for (const SchedulerState::Trainer& trainer : saved->trainers) {
    trainer_ids_[trainer.name] = trainer.id;
    if (!trainer.key.empty()) trainer_keys_[trainer.id] = trainer.key;
  }
  clocks_.Restore(saved->clocks, now);
  cuts_.Restore(saved->cuts, now);
  cut_coordinator_ = saved->cut_coordinator;
  cuts_completed_ = saved->cuts_completed;
  cuts_failed_ = saved->cuts_failed;
  last_cut_clock_ = saved->last_cut_clock;
  last_cut_outcome_ = saved->last_cut_error.empty() ? Status::Ok() : Aborted(saved->last_cut_error);
  spdlog::info("scheduler: restarted from {}: {} servers, routing epoch {}, {} moves in flight, "
               "{} trainers (highest clock {}), {} checkpoint cut under way",
               options_.data_dir, servers_.size(), routing_.epoch, saved->moves.in_flight.size(),
               saved->trainers.size(), saved->clocks.highest_clock, saved->cuts.active ? 1 : 0);
  if (HasWildcardPort(options_.bind) && !saved->endpoint.empty()) return saved->endpoint;
  return options_.bind;
}

}  // namespace ember::scheduler
