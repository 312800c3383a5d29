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
