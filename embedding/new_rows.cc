// NewRows: the initial rows of new keys and their admission.
#include "embedding/new_rows.h"

#include <cstring>
#include <ctime>
#include <span>

#include "embedding/initializer.h"

namespace ember::embedding {

NewRows::NewRows(const TableSpec& spec, const RowOptimizer& optimizer, TableStatCounters& counters)
    : spec_(spec),
      optimizer_(optimizer),
      stamp_float_(spec.dim + optimizer.state_floats()),
      counters_(counters) {
  if (spec.admit_after > 1) admission_ = std::make_unique<AdmissionFilter>(spec.admit_after);
}

uint32_t NewRows::NowSeconds() const {
  return now_ ? now_() : static_cast<uint32_t>(std::time(nullptr));
}

void NewRows::InitWeightsAndState(uint64_t key, float* row) const {
  InitializeRow(spec_, key, std::span<float>(row, spec_.dim));
  optimizer_.InitState(std::span<float>(row + spec_.dim, optimizer_.state_floats()));
}

void NewRows::Init(uint64_t key, float* row) const {
  InitWeightsAndState(key, row);
  StampUpdate(row);
}

void NewRows::StampUpdate(float* row) const {
  if (spec_.ttl_seconds == 0) return;
  const uint32_t now = NowSeconds();
  std::memcpy(row + stamp_float_, &now, sizeof(now));
}

float* NewRows::NotAdmitted(uint64_t key, bool push, float* row) {
  InitWeightsAndState(key, row);
  counters_.Add(TableStat::kNotAdmitted);
  if (push) counters_.Add(TableStat::kUpdatesDropped);
  return row;
}

}  // namespace ember::embedding
