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
      options_(std::move(options)), clock_(client->start_clock()),
      sync_(*client, options_.sync, options_.rank) {
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
  return sync_.CompleteCut(cut, &record);
}

Status Trainer::TakeCheckpoint(const Result<std::string>& data_position) {
  return sync_.TakeCut(WriteOwnFile(sync_.pending_cut().dir, data_position));
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
