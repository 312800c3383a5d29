// StepSync: clock reports, bsp applies and checkpoint cuts after a trainer's steps.
#include "trainer/step_sync.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "common/checkpoint_layout.h"
#include "ps/client/checkpoint.h"

namespace ember::trainer {
namespace {

std::string ChainPlaceText(int64_t chain_place) {
  if (chain_place < 0) return "full";
  if (chain_place == 0) return "the base of a chain";
  return "increment " + std::to_string(chain_place) + " of its chain";
}

}  // namespace

StepSync::StepSync(ps::Client& client, SyncOptions sync, uint32_t rank)
    : client_(client), sync_(std::move(sync)), rank_(rank) {}

Status StepSync::EndStep(uint64_t clock) {
  ASSIGN_OR_RETURN(ClockGrant grant,
                   client_.scheduler().ReportClock(client_.trainer_id(), clock,
                                                   sync_.clock_timeout));
  if (grant.cut.clock > clock) pending_cut_ = grant.cut;
  if (sync_.mode != SyncMode::kBsp) return Status::Ok();
  return client_.ApplyClock(clock, grant.trainers, sync_.combine, sync_.clock_timeout,
                            grant.signature);
}

Status StepSync::TakeCut(const Status& own_file) {
  const CutInfo cut = pending_cut_;
  pending_cut_ = CutInfo{};
  last_cut_written_ = false;
  if (!own_file.ok()) {
    spdlog::error("trainer {}: cannot write its part of the checkpoint after step {}: {}", rank_,
                  cut.clock, own_file.ToString());
  }
  // Arrive even without a file, so the others learn at once that this cut fails.
  auto arrived = client_.scheduler().ArriveAtCut(client_.trainer_id(), cut.clock,
                                                 sync_.clock_timeout);
  if (!arrived.ok()) {
    spdlog::warn("trainer {}: checkpoint after step {} into {} failed: {}; training goes on",
                 rank_, cut.clock, cut.dir, arrived.status().ToString());
    return Status::Ok();
  }
  if (!arrived->coordinate) {  // the cut is over: written, or its error came back
    last_cut_written_ = true;
    return Status::Ok();
  }
  const auto start = std::chrono::steady_clock::now();
  CutRecord record{.step = cut.clock};
  const Status outcome = own_file.ok() ? CompleteCut(*arrived, &record) : own_file;
  if (outcome.ok()) {
    record.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    records_.push_back(record);
    last_cut_written_ = true;
    spdlog::info("trainer {}: checkpoint after step {} written to {} in {:.2f} s ({}, {:.1f} MB "
                 "of partition files)",
                 rank_, cut.clock, cut.dir, record.seconds, ChainPlaceText(record.chain_place),
                 record.bytes / 1e6);
  } else {
    spdlog::error("trainer {}: checkpoint after step {} into {} failed: {}; training goes on",
                  rank_, cut.clock, cut.dir, outcome.ToString());
  }
  return client_.scheduler().FinishCut(client_.trainer_id(), cut.clock, outcome,
                                       sync_.clock_timeout);
}

Status StepSync::CompleteCut(const CutInfo& cut, CutRecord* record) {
  ASSIGN_OR_RETURN(const ps::CheckpointChaining chaining,
                   ps::ChainingOf(cut, client_.routing().num_partitions));
  ASSIGN_OR_RETURN(Manifest manifest, ps::CheckpointServers(client_, cut.dir, cut.clock,
                                                               sync_.clock_timeout, chaining));
  manifest.trainers = sync_.trainers;
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

std::vector<CutRecord> StepSync::TakeRecords() {
  std::vector<CutRecord> records = std::move(records_);
  records_.clear();
  return records;
}

}  // namespace ember::trainer
