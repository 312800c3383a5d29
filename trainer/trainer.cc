// Trainer implementation.
#include "trainer/trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>

#include "common/file_io.h"
#include "ps/client/checkpoint.h"
#include "trainer/batch.h"
#include "trainer/tower_batch.h"
#include "trainer/trainer_checkpoint.h"

namespace ember::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// How long servers keep a hint's rows pinned when its push does not come (the trainer died).
constexpr Millis kHintLifetime{60'000};

double MillisSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

Status CheckTables(const ps::Client& client, const std::vector<std::string>& tables,
                   uint32_t slots, uint32_t dim, const char* tower) {
  if (tables.size() != slots) {
    return InvalidArgument(std::string("train.") + tower + "_tables names " +
                           std::to_string(tables.size()) + " tables but the " + tower +
                           " tower has " + std::to_string(slots) + " slots");
  }
  for (const std::string& name : tables) {
    ASSIGN_OR_RETURN(const TableSpec* spec, client.FindTable(name));
    if (spec->dim != dim) {
      return InvalidArgument("table '" + name + "' has dim " + std::to_string(spec->dim) +
                             " but the model's embedding_dim is " + std::to_string(dim));
    }
  }
  return Status::Ok();
}

// Accumulates per-step figures into a window.
struct WindowAccumulator {
  uint32_t first_step = 0;
  uint32_t steps = 0;
  double loss = 0, pull = 0, compute = 0, push = 0, wait = 0, unique = 0, device = 0;
  uint64_t samples = 0;
  Clock::time_point start = Clock::now();

  WindowStats Finish(uint32_t last_step) const {
    WindowStats w;
    w.first_step = first_step;
    w.last_step = last_step;
    const double n = std::max<uint32_t>(steps, 1);
    w.loss = loss / n;
    w.pull_ms = pull / n;
    w.compute_ms = compute / n;
    w.push_ms = push / n;
    w.wait_ms = wait / n;
    w.unique_keys = unique / n;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    w.device_busy = seconds > 0 ? device / (seconds * 1000.0) : 0;
    w.samples_per_second = seconds > 0 ? samples / seconds : 0;
    return w;
  }
};

}  // namespace

Trainer::Trainer(ps::Client* client, Backend* backend, DataSource* data, const ModelConfig& model,
                 TrainOptions options)
    : client_(client), backend_(backend), data_(data), model_(model),
      options_(std::move(options)), clock_(client->start_clock()) {
  if (options_.dense_on_servers()) dense_ = std::make_unique<DenseTable>(model_);
  if (options_.lookahead > 0) {
    lookahead_ = std::make_unique<LookaheadSource>(
        data, options_.lookahead,
        [this](const Batch& batch, uint64_t id) { AnnounceBatch(batch, id); });
    data_ = lookahead_.get();
  }
}

void Trainer::AnnounceBatch(const Batch& batch, uint64_t id) {
  // One hint per table (slots may share one: a table's hint holds the keys of all its slots).
  std::map<std::string, std::vector<uint64_t>> keys_by_table;
  auto gather = [&](const std::vector<std::string>& tables,
                    const std::vector<std::vector<uint64_t>>& keys) {
    for (size_t slot = 0; slot < tables.size() && slot < keys.size(); ++slot) {
      auto& keys_of_table = keys_by_table[tables[slot]];
      keys_of_table.insert(keys_of_table.end(), keys[slot].begin(), keys[slot].end());
    }
  };
  gather(options_.user_tables, batch.user_keys);
  gather(options_.item_tables, batch.item_keys);
  // Hints still in flight are not waited for; an error only costs speed, and is logged once.
  while (!hints_.empty() && hints_.front().ready()) {
    Status answered = hints_.front().Wait();
    hints_.pop_front();
    if (!answered.ok() && !hint_failure_logged_) {
      hint_failure_logged_ = true;
      spdlog::warn("trainer {}: a look-ahead hint was refused ({}); training goes on, slower "
                   "(logged once)", options_.rank, answered.ToString());
    }
  }
  for (auto& [table, keys] : keys_by_table) {
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    hints_.push_back(client_->Hint(table, keys, id, kHintLifetime));
  }
}

Result<std::unique_ptr<Trainer>> Trainer::Create(ps::Client* client, Backend* backend,
                                                 DataSource* data, const ModelConfig& model,
                                                 TrainOptions options) {
  if (data->user_slots() != model.user_slots || data->item_slots() != model.item_slots) {
    return InvalidArgument("the data has " + std::to_string(data->user_slots()) + "+" +
                           std::to_string(data->item_slots()) +
                           " user+item slots but the model expects " +
                           std::to_string(model.user_slots) + "+" +
                           std::to_string(model.item_slots));
  }
  RETURN_IF_ERROR(CheckTables(*client, options.user_tables, model.user_slots,
                              model.embedding_dim, "user"));
  RETURN_IF_ERROR(CheckTables(*client, options.item_tables, model.item_slots,
                              model.embedding_dim, "item"));
  if (options.dense_on_servers()) {
    auto dense = client->FindTable(kDenseTableName);
    if (!dense.ok() || (*dense)->dim != kDenseChunk) {
      return FailedPrecondition(std::string("the dense weights live on the servers, but the "
                                            "cluster has no table '") +
                                kDenseTableName + "' of dim " + std::to_string(kDenseChunk));
    }
  }
  if (options.pipeline && options.sync.synchronised()) {
    return InvalidArgument("train.pipeline needs train.mode asp");
  }
  return std::unique_ptr<Trainer>(new Trainer(client, backend, data, model, std::move(options)));
}

Result<TrainSummary> Trainer::Run(uint32_t steps,
                                  const std::function<void(const WindowStats&)>& on_window,
                                  const StepHook& after_step) {
  const uint32_t batch_size = options_.batch_size;
  const uint32_t dim = model_.embedding_dim;
  const uint32_t log_every = options_.log_every > 0 ? options_.log_every : steps;
  TrainSummary summary;
  summary.backend = std::string(backend_->name());

  // Three sets of buffers, used in turn: step t computes from one while the rows of step t+1
  // arrive into the next (pipeline mode) and the gradients of step t-1 leave from the previous.
  struct StepBuffers {
    Batch batch;
    TowerBatch user, item;
    std::vector<ps::Ticket> pulls, pushes;
    std::vector<float> dense_rows, dense_grads;  // when dense_
    uint64_t hint = 0;  // with look-ahead: the hint that announced the batch, which its push ends
  };
  StepBuffers buffers[3];
  if (dense_) {
    for (StepBuffers& b : buffers) {
      b.dense_rows.resize(dense_->buffer_floats());
      b.dense_grads.resize(dense_->buffer_floats());
    }
  }
  const bool deferred = options_.sync.mode == SyncMode::kBsp;
  auto prepare = [&](StepBuffers& b) -> Status {
    RETURN_IF_ERROR(data_->Next(batch_size, &b.batch));
    b.hint = lookahead_ ? lookahead_->last_id() : 0;
    b.user.Prepare(b.batch.user_keys, dim, b.batch.user_offsets);
    b.item.Prepare(b.batch.item_keys, dim, b.batch.item_offsets);
    return Status::Ok();
  };
  auto start_pull = [&](StepBuffers& b) {
    if (observer_.before_pull) observer_.before_pull(clock_);
    if (dense_) dense_->StartPull(*client_, b.dense_rows, &b.pulls);
    b.user.StartPull(*client_, options_.user_tables, &b.pulls);
    b.item.StartPull(*client_, options_.item_tables, &b.pulls);
  };
  // Waits for every push still in flight (also on early return), so no ticket outlives its rows.
  auto drain_pushes = [&] {
    Status first;
    for (StepBuffers& b : buffers) {
      Status status = WaitAll(b.pushes);
      if (first.ok() && !status.ok()) first = status;
    }
    for (StepBuffers& b : buffers) (void)WaitAll(b.pulls);
    return first;
  };
  struct DrainOnExit {
    std::function<Status()> drain;
    ~DrainOnExit() { (void)drain(); }
  } drain_on_exit{drain_pushes};

  // The data position after step `step_clock`, noted before the next batch is drawn, for a cut
  // or a checkpoint the step hook may write.
  auto note_position = [&](uint64_t step_clock) {
    if (pending_cut_.clock != step_clock && !after_step) return;
    noted_position_ = data_->SavePosition();
    noted_position_clock_ = step_clock;
  };
  ran_ = true;

  const uint32_t first_step = completed_steps_ + 1;
  WindowAccumulator window;
  window.first_step = first_step;
  const auto run_start = Clock::now();
  uint32_t last_step = first_step - 1;
  if (lookahead_) lookahead_->ExpectOnly(first_step <= steps ? steps - first_step + 1 : 0);
  if (first_step <= steps) {
    RETURN_IF_ERROR(prepare(buffers[0]));
    start_pull(buffers[0]);
  }
  for (uint32_t step = first_step; step <= steps; ++step) {
    const uint32_t n = step - first_step;
    StepBuffers& current = buffers[n % 3];
    StepBuffers& next = buffers[(n + 1) % 3];      // step t-2's buffer: its pushes are done
    StepBuffers& previous = buffers[(n + 2) % 3];  // step t-1's buffer
    const std::string where = "step " + std::to_string(step);

    auto phase = Clock::now();
    RETURN_IF_ERROR(WaitAll(current.pulls).WithContext(where + " pull"));
    double pull_ms = MillisSince(phase);
    if (options_.pipeline && step < steps) {
      phase = Clock::now();
      note_position(clock_ + 1);
      RETURN_IF_ERROR(prepare(next));
      start_pull(next);  // reads rows before this step's (and maybe the last step's) updates
      pull_ms += MillisSince(phase);
    }

    phase = Clock::now();
    if (dense_) RETURN_IF_ERROR(dense_->Load(current.dense_rows, *backend_).WithContext(where));
    TowerInput item_input = current.item.Input();
    if (options_.sampling_correction && model_.loss == LossKind::kInBatchSoftmax) {
      item_input.logit_offset = current.batch.item_log_frequency;
    }
    ASSIGN_OR_RETURN(StepStats stats,
                     backend_->TrainStep(batch_size, current.user.Input(), item_input));
    const double compute_ms = MillisSince(phase);

    ++clock_;
    current.user.StartPush(*client_, options_.user_tables, clock_, deferred, current.hint,
                           &current.pushes);
    current.item.StartPush(*client_, options_.item_tables, clock_, deferred, current.hint,
                           &current.pushes);
    if (dense_) {
      RETURN_IF_ERROR(dense_->StartPush(*client_, *backend_, current.dense_grads, clock_,
                                        deferred, &current.pushes)
                          .WithContext(where));
    }
    double push_ms = 0, wait_ms = 0;
    if (options_.pipeline) {
      phase = Clock::now();
      RETURN_IF_ERROR(WaitAll(previous.pushes).WithContext("step " + std::to_string(step - 1) +
                                                           " push"));
      push_ms = MillisSince(phase);
      phase = Clock::now();
      RETURN_IF_ERROR(SynchroniseClock().WithContext(where));  // asp: answered at once
      if (pending_cut_.clock == clock_) {
        RETURN_IF_ERROR(WaitAll(current.pushes).WithContext(where + " push"));
      }
    } else {
      if (step < steps) {  // while the pushes fly
        note_position(clock_);
        RETURN_IF_ERROR(prepare(next));
      }
      phase = Clock::now();
      RETURN_IF_ERROR(WaitAll(current.pushes).WithContext(where + " push"));
      push_ms = MillisSince(phase);
      if (observer_.step_done) observer_.step_done(clock_);
      phase = Clock::now();
      RETURN_IF_ERROR(SynchroniseClock().WithContext(where));
    }
    if (pending_cut_.clock == clock_) {
      if (step == steps) note_position(clock_);  // no batch was drawn after it
      RETURN_IF_ERROR(TakeCheckpoint(noted_position_).WithContext(where + " checkpoint"));
    }
    wait_ms = MillisSince(phase);
    bool stop = false;
    if (after_step) {
      if (step == steps) note_position(clock_);
      if (options_.pipeline) RETURN_IF_ERROR(WaitAll(current.pushes).WithContext(where + " push"));
      completed_steps_ = step;
      ASSIGN_OR_RETURN(stop, after_step(step));
    }
    last_step = step;
    if (!stop && !options_.pipeline && step < steps) start_pull(next);  // sees every update

    window.steps += 1;
    window.loss += stats.loss;
    window.pull += pull_ms;
    window.compute += compute_ms;
    window.push += push_ms;
    window.wait += wait_ms;
    window.device += stats.device_ms;
    window.unique += static_cast<double>(current.user.unique_keys() + current.item.unique_keys());
    window.samples += batch_size;
    summary.samples += batch_size;

    if (step % log_every == 0 || step == steps || stop) {
      WindowStats finished = window.Finish(step);
      summary.windows.push_back(finished);
      if (on_window) on_window(finished);
      window = WindowAccumulator{};
      window.first_step = step + 1;
    }
    if (stop) break;
  }
  RETURN_IF_ERROR(drain_pushes().WithContext("final push"));
  RETURN_IF_ERROR(client_->scheduler().Leave(client_->trainer_id(), clock_));
  completed_steps_ = last_step;
  summary.steps = last_step - (first_step - 1);
  summary.seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  summary.samples_per_second = summary.seconds > 0 ? summary.samples / summary.seconds : 0;
  summary.cuts = std::move(cuts_);
  cuts_.clear();
  if (!summary.windows.empty()) {
    summary.first_window = summary.windows.front();
    summary.last_window = summary.windows.back();
  }
  return summary;
}

Status Trainer::SynchroniseClock() {
  ASSIGN_OR_RETURN(ClockGrant grant,
                   client_->scheduler().ReportClock(client_->trainer_id(), clock_,
                                                    options_.sync.clock_timeout));
  if (grant.cut.clock > clock_) pending_cut_ = grant.cut;
  if (options_.sync.mode != SyncMode::kBsp) return Status::Ok();
  return client_->ApplyClock(clock_, grant.trainers, options_.sync.combine,
                             options_.sync.clock_timeout, grant.signature);
}

Result<DenseState> Trainer::CurrentDenseState() {
  if (!dense_) return backend_->GetState();
  std::vector<float> rows(dense_->buffer_floats());
  std::vector<ps::Ticket> pulls;
  dense_->StartPull(*client_, rows, &pulls);
  RETURN_IF_ERROR(WaitAll(pulls).WithContext("pulling the dense weights"));
  RETURN_IF_ERROR(dense_->Load(rows, *backend_));
  DenseState state;
  state.weights = backend_->GetWeights();
  return state;
}

Status Trainer::WriteOwnFile(const std::string& dir, const Result<std::string>& data_position) {
  TrainerCheckpoint file;
  file.step = clock_;
  file.rank = options_.rank;
  file.trainers = options_.sync.trainers;
  ASSIGN_OR_RETURN(file.data_position, data_position);
  ASSIGN_OR_RETURN(file.dense, CurrentDenseState());
  file.has_optimizer_state = !dense_;
  RETURN_IF_ERROR(MakeDirectories(dir));
  return WriteTrainerCheckpoint(TrainerFilePath(dir, options_.rank), file);
}

Status Trainer::WriteCheckpoint(const std::string& dir) {
  if (options_.sync.trainers != 1) {
    return FailedPrecondition("a checkpoint outside a cut needs a run of one trainer (this run "
                              "has " + std::to_string(options_.sync.trainers) + ")");
  }
  Result<std::string> position = noted_position_;
  if (!ran_) {
    position = data_->SavePosition();
  } else if (noted_position_clock_ != clock_) {
    return FailedPrecondition("the data position after step " + std::to_string(clock_) +
                              " was not noted: write a checkpoint from the step hook");
  }
  RETURN_IF_ERROR(WriteOwnFile(dir, position));
  CutInfo cut;
  cut.dir = dir;
  cut.clock = clock_;
  CutRecord record;
  return CompleteCut(cut, &record);
}

Status Trainer::TakeCheckpoint(const Result<std::string>& data_position) {
  const CutInfo cut = pending_cut_;
  pending_cut_ = CutInfo{};
  const Status written = WriteOwnFile(cut.dir, data_position);
  if (!written.ok()) {
    spdlog::error("trainer {}: cannot write its part of the checkpoint after step {}: {}",
                  options_.rank, clock_, written.ToString());
  }
  // Arrive even without a file, so the others learn at once that this cut fails.
  auto arrived = client_->scheduler().ArriveAtCut(client_->trainer_id(), cut.clock,
                                                  options_.sync.clock_timeout);
  if (!arrived.ok()) {
    spdlog::warn("trainer {}: checkpoint after step {} into {} failed: {}; training goes on",
                 options_.rank, cut.clock, cut.dir, arrived.status().ToString());
    return Status::Ok();
  }
  if (!arrived->coordinate) return Status::Ok();
  const auto start = Clock::now();
  CutRecord record{.step = cut.clock};
  const Status outcome = written.ok() ? CompleteCut(*arrived, &record) : written;
  if (outcome.ok()) {
    record.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    cuts_.push_back(record);
    const std::string kind = record.chain_place < 0    ? std::string("full")
                             : record.chain_place == 0 ? std::string("the base of a chain")
                                                       : "increment " +
                                                             std::to_string(record.chain_place) +
                                                             " of its chain";
    spdlog::info("trainer {}: checkpoint after step {} written to {} in {:.2f} s ({}, {:.1f} MB "
                 "of partition files)",
                 options_.rank, cut.clock, cut.dir, record.seconds, kind, record.bytes / 1e6);
  } else {
    spdlog::error("trainer {}: checkpoint after step {} into {} failed: {}; training goes on",
                  options_.rank, cut.clock, cut.dir, outcome.ToString());
  }
  return client_->scheduler().FinishCut(client_->trainer_id(), cut.clock, outcome,
                                        options_.sync.clock_timeout);
}

Status Trainer::CompleteCut(const CutInfo& cut, CutRecord* record) {
  ASSIGN_OR_RETURN(const ps::CheckpointChaining chaining,
                   ps::ChainingOf(cut, client_->routing().num_partitions));
  ASSIGN_OR_RETURN(Manifest manifest, ps::CheckpointServers(*client_, cut.dir, cut.clock,
                                                                options_.sync.clock_timeout,
                                                                chaining));
  manifest.trainers = options_.sync.trainers;
  for (uint32_t rank = 0; rank < manifest.trainers; ++rank) {
    const std::string path = TrainerFilePath(cut.dir, rank);
    if (!std::filesystem::exists(path)) {
      return FailedPrecondition("'" + path + "' is missing: trainer " + std::to_string(rank) +
                                " did not take part in the cut (it left, died or failed to "
                                "write it)");
    }
  }
  RETURN_IF_ERROR(WriteManifest(cut.dir, manifest));
  ASSIGN_OR_RETURN(const Manifest written, ReadManifest(cut.dir));
  for (const ManifestFile& file : written.files) {
    if (file.path.rfind("tables/", 0) == 0) record->bytes += file.bytes;
  }
  record->chain_place = chaining.chained ? static_cast<int64_t>(written.chain.sequence) : -1;
  if (cut.keep > 0) {
    return PruneCheckpoints(std::filesystem::path(cut.dir).parent_path().string(), cut.keep);
  }
  return Status::Ok();
}

Status Trainer::Restore(const std::string& dir) {
  const std::string absolute = std::filesystem::absolute(dir).lexically_normal().string();
  ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(absolute));
  if (manifest.trainers != options_.sync.trainers) {
    return FailedPrecondition("checkpoint '" + absolute + "' was written by a run of " +
                              std::to_string(manifest.trainers) + " trainers; this run has " +
                              std::to_string(options_.sync.trainers) +
                              " (each trainer resumes its own share of the data)");
  }
  if (options_.rank == 0) {
    RETURN_IF_ERROR(ps::RestoreServers(*client_, absolute, options_.sync.clock_timeout).status());
  }
  if (options_.sync.trainers > 1) {
    RETURN_IF_ERROR(client_->scheduler()
                        .Barrier("restore " + absolute, options_.sync.trainers,
                                 options_.sync.clock_timeout)
                        .WithContext("waiting for trainer 0 to restore the servers"));
  }
  const std::string path = TrainerFilePath(absolute, options_.rank);
  ASSIGN_OR_RETURN(TrainerCheckpoint file, ReadTrainerCheckpoint(path, model_));
  if (file.rank != options_.rank || file.step != manifest.step) {
    return DataLoss("'" + path + "' holds trainer " + std::to_string(file.rank) + " at step " +
                    std::to_string(file.step) + ", the manifest says trainer " +
                    std::to_string(options_.rank) + " at step " + std::to_string(manifest.step));
  }
  RETURN_IF_ERROR(data_->RestorePosition(file.data_position).WithContext(path));
  if (!dense_) {
    if (!file.has_optimizer_state) {
      return FailedPrecondition("'" + path + "' has no optimizer state for the dense weights "
                                "(they were on the servers); run with train.dense: servers");
    }
    RETURN_IF_ERROR(backend_->SetState(file.dense).WithContext(path));
  }
  clock_ = file.step;
  completed_steps_ = static_cast<uint32_t>(file.step);
  return Status::Ok();
}

}  // namespace ember::trainer
