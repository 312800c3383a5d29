// NewRows: what a key without a row starts as (its deterministic initial weights, the optimizer's
// initial state and, with a TTL, the time it was stamped), and whether it gets a row at all yet
// (with spec.admit_after > 1, only once it occurred in that many requests: admission_filter.h).
//
// Thread-safety: every method may be called from many threads at once; SetClockForTesting only
// before any other.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "common/table_spec.h"
#include "common/table_stats.h"
#include "embedding/admission_filter.h"
#include "embedding/optimizer.h"

namespace ember::embedding {

class NewRows {
 public:
  // Rows of `spec` (borrowed, outlives this) updated by `optimizer` (borrowed); `counters` (the
  // table's) gets the keys not admitted and the updates dropped for them.
  NewRows(const TableSpec& spec, const RowOptimizer& optimizer, TableStatCounters& counters);

  // Writes the row `key` starts with into `row`: initial weights, optimizer state, time stamp.
  void Init(uint64_t key, float* row) const;
  // Stamps `row` as updated now (no-op without a TTL).
  void StampUpdate(float* row) const;
  uint32_t NowSeconds() const;
  // Whether stamping a row is an event of its own (the table has a TTL).
  bool stamps_time() const { return spec_.ttl_seconds > 0; }

  // Whether keys are admitted by count (spec.admit_after > 1).
  bool admits_by_count() const { return admission_ != nullptr; }
  // Whether a key without a row gets one now (counts the occurrence).
  bool Admit(uint64_t key) { return admission_ == nullptr || admission_->CountAndAdmit(key); }
  // Writes the initial value of a key that is not admitted yet into `row` (scratch space of the
  // request, dropped after it) and counts it (and, for a push, the update dropped); returns `row`.
  float* NotAdmitted(uint64_t key, bool push, float* row);

  // Replaces the wall clock (seconds since the epoch) that stamps updates.
  void SetClockForTesting(std::function<uint32_t()> now_seconds) { now_ = std::move(now_seconds); }

 private:
  // The key's initial weights and the optimizer's initial state, without a time stamp.
  void InitWeightsAndState(uint64_t key, float* row) const;

  const TableSpec& spec_;
  const RowOptimizer& optimizer_;
  const uint32_t stamp_float_;  // where a row's update time is (with a TTL)
  TableStatCounters& counters_;
  std::unique_ptr<AdmissionFilter> admission_;  // null: every key gets a row
  std::function<uint32_t()> now_;               // seconds since the epoch; null: the wall clock
};

}  // namespace ember::embedding
