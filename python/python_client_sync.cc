// PythonClient (python_client.h): the steps of a synchronised run, as the C++ trainer takes them
// (trainer/step_sync.h): clock reports, bsp applies and checkpoint cuts.
#include <string>

#include "common/checkpoint_layout.h"
#include "python/python_client.h"

namespace ember::python {

py::dict PythonClient::SyncDict() {
  const SyncOptions& sync = Connected()->sync();
  py::dict out;
  out["mode"] = std::string(SyncModeName(sync.mode));
  out["staleness"] = sync.staleness;
  out["combine"] = sync.combine == Combine::kMean ? "mean" : "sum";
  out["trainers"] = sync.trainers;
  out["clock_timeout"] = sync.clock_timeout.count() / 1000.0;
  return out;
}

py::object PythonClient::EndStep() {
  std::shared_ptr<ps::Client> client = Connected();
  std::shared_ptr<trainer::StepSync> sync = step_sync_;
  if (client->read_only()) {
    ThrowStatus(PermissionDenied("end_step() on a read-only client (a reader): it takes no steps"));
  }
  if (sync->pending_cut().clock != 0 && sync->pending_cut().clock <= clock()) {
    ThrowStatus(FailedPrecondition("the checkpoint cut after step " +
                                   std::to_string(sync->pending_cut().clock) +
                                   " was not taken: call take_cut() before the next step"));
  }
  const uint64_t clock = clock_.load() + 1;
  ThrowIfError(WithoutGil([&] { return sync->EndStep(clock); })
                   .WithContext("ending step " + std::to_string(clock)));
  clock_.store(clock, std::memory_order_release);
  if (!sync->CutAfter(clock)) return py::none();
  py::dict cut;
  cut["clock"] = clock;
  cut["dir"] = sync->pending_cut().dir;
  cut["file"] = TrainerFilePath(sync->pending_cut().dir, rank_);
  return cut;
}

bool PythonClient::TakeCut(const std::string& error) {
  std::shared_ptr<ps::Client> client = Connected();
  std::shared_ptr<trainer::StepSync> sync = step_sync_;
  if (!sync->CutAfter(clock())) {
    ThrowStatus(FailedPrecondition("no checkpoint cut is due after step " +
                                   std::to_string(clock())));
  }
  const Status own_file = error.empty() ? Status::Ok() : Internal(error);
  ThrowIfError(WithoutGil([&] { return sync->TakeCut(own_file); }));
  return sync->last_cut_written();
}

}  // namespace ember::python
