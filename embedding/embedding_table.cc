// EmbeddingTable implementation: per-partition locking over RowStores.
#include "embedding/embedding_table.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>

#include "common/check.h"
#include "common/hash.h"
#include "embedding/embedding_table_internal.h"
#include "embedding/initializer.h"
#include "embedding/table_config.h"

namespace ember::embedding {

using internal::kPrefetchDistance;
using internal::PrefetchRow;

namespace {

RowOptimizer MakeOptimizer(const TableSpec& spec) {
  Status valid = ValidateTableSpec(spec);
  EMBER_CHECK(valid.ok(), valid.ToString());
  Result<RowOptimizer> optimizer = RowOptimizer::Create(spec.optimizer, spec.dim);
  EMBER_CHECK(optimizer.ok(), optimizer.status().ToString());
  return *optimizer;
}

// Lock stripes per table: enough that threads rarely meet, few enough that a request's keys form
// long runs per stripe for the prefetcher.
constexpr uint32_t kMaxLockStripes = 64;
// The check of a push made with Push(keys, grads, also_log): it applies every push and adds
// also_log's records.
class LogHookOnly final : public EmbeddingTable::PushCheck {
 public:
  explicit LogHookOnly(const EmbeddingTable::PushLogHook& also_log) : also_log_(also_log) {}
  Result<Verdict> Check(std::span<const uint64_t>, std::span<const uint32_t>) override {
    return Verdict::kApply;
  }
  void AppendWrites(RowWrites& batch) override {
    if (also_log_) also_log_(batch);
  }

 private:
  const EmbeddingTable::PushLogHook& also_log_;
};

}  // namespace

namespace internal {

RequestGroups& GroupByStripe(std::span<const uint64_t> keys, uint64_t table_id,
                             uint32_t num_partitions, uint32_t num_stripes) {
  const uint32_t stripe_mask = num_stripes - 1;
  thread_local RequestGroups groups;
  const uint32_t n = static_cast<uint32_t>(keys.size());
  groups.partition.resize(n);
  groups.order.resize(n);
  groups.rows.resize(n);
  groups.bounds.assign(num_stripes + 1, 0);
  groups.scratch_used = 0;
  groups.entries_prefetched = 0;
  for (uint32_t i = 0; i < n; ++i) {
    groups.partition[i] = ember::PartitionOf(table_id, keys[i], num_partitions);
    ++groups.bounds[(groups.partition[i] & stripe_mask) + 1];
  }
  for (uint32_t s = 0; s < num_stripes; ++s) groups.bounds[s + 1] += groups.bounds[s];
  thread_local std::vector<uint32_t> next_slot;  // per stripe, where its next position goes
  next_slot.assign(groups.bounds.begin(), groups.bounds.end() - 1);
  for (uint32_t i = 0; i < n; ++i) groups.order[next_slot[groups.partition[i] & stripe_mask]++] = i;
  return groups;
}

}  // namespace internal

EmbeddingTable::EmbeddingTable(const TableSpec& spec, uint32_t num_partitions)
    : EmbeddingTable(spec, num_partitions, nullptr) {}

EmbeddingTable::EmbeddingTable(const TableSpec& spec, uint32_t num_partitions,
                               const TierOptions* tier)
    : spec_(spec),
      table_id_(HashName(spec.name)),
      optimizer_(MakeOptimizer(spec)),
      floats_per_row_(PersistedFloatsPerRow(spec)),
      stored_floats_(floats_per_row_ + (tier != nullptr ? 1 : 0)),
      num_partitions_(num_partitions),
      num_stripes_(std::bit_floor(std::clamp(num_partitions, 1u, kMaxLockStripes))),
      stripes_(std::make_unique<Stripe[]>(num_stripes_)),
      changes_(num_partitions, [this](uint32_t p) { return PartitionRowsLocked(p); }) {
  EMBER_CHECK(num_partitions >= 1, "table", spec.name, "needs at least one partition");
  stores_.reserve(num_partitions);
  for (uint32_t p = 0; p < num_partitions; ++p) stores_.emplace_back(stored_floats_);
  if (tier != nullptr) InitTier(*tier);
  if (spec.admit_after > 1) admission_ = std::make_unique<AdmissionFilter>(spec.admit_after);
}

uint32_t EmbeddingTable::PartitionOf(uint64_t key) const {
  return ember::PartitionOf(table_id_, key, num_partitions());
}

uint32_t EmbeddingTable::PersistedFloatsPerRow(const TableSpec& spec) {
  auto optimizer = RowOptimizer::Create(spec.optimizer, spec.dim);
  EMBER_CHECK(optimizer.ok(), optimizer.status().ToString());
  return spec.dim + optimizer->state_floats() + (spec.ttl_seconds > 0 ? 1 : 0);
}

uint32_t EmbeddingTable::NowSeconds() const {
  return now_ ? now_() : static_cast<uint32_t>(std::time(nullptr));
}

void EmbeddingTable::InitNewRow(uint64_t key, float* row) const {
  InitializeRow(spec_, key, std::span<float>(row, spec_.dim));
  optimizer_.InitState(std::span<float>(row + spec_.dim, optimizer_.state_floats()));
  StampUpdate(row);
}

void EmbeddingTable::StampUpdate(float* row) const {
  if (spec_.ttl_seconds == 0) return;
  const uint32_t now = NowSeconds();
  std::memcpy(row + floats_per_row_ - 1, &now, sizeof(now));
}

float* EmbeddingTable::FindOrCreateRow(uint32_t partition, uint64_t key) {
  if (admission_ != nullptr) {
    if (float* row = stores_[partition].Find(key)) return row;
    if (!Admit(key)) return nullptr;
  }
  auto [row, inserted] = stores_[partition].FindOrInsert(key);
  if (inserted) {
    InitNewRow(key, row);
    rows_.fetch_add(1, std::memory_order_relaxed);
    changes_.Note(partition, key);
  }
  return row;
}

template <typename Use>
Status EmbeddingTable::ForEachRequestRow(std::span<const uint64_t> keys, size_t prefetch_floats,
                                         Use&& use, const float* position_data,
                                         const RequestCheck* pull_check, PushCheck* push_check) {
  internal::RequestGroups& groups =
      internal::GroupByStripe(keys, table_id_, num_partitions_, num_stripes_);
  const bool push = push_check != nullptr;
  if (push) {
    ASSIGN_OR_RETURN(const PushCheck::Verdict verdict, push_check->Check(keys, groups.partition));
    if (verdict == PushCheck::Verdict::kSkip) return Status::Ok();
  } else if (pull_check != nullptr && *pull_check) {
    RETURN_IF_ERROR((*pull_check)(keys, groups.partition));
  }
  if (admission_ != nullptr) groups.ReserveScratch(keys.size(), stored_floats_);
  if (tier_ != nullptr) {
    return ForEachTieredRequestRow(keys, groups, use, position_data, push_check);
  }
  // Each key passes three stages kPrefetchDistance keys apart: its index entry is prefetched (for
  // any stripe: a prefetch reads nothing, see RowStore::Prefetch), its row is looked up under its
  // stripe's lock and prefetched, then the row is used. The entry stage runs across stripes, so a
  // stripe's first lookups find their entries in cache.
  const auto look_up = [&](uint32_t j) {
    const uint32_t at = groups.order[j];
    float* row = FindOrCreateRow(groups.partition[at], keys[at]);
    if (push && row != nullptr) changes_.Note(groups.partition[at], keys[at]);
    groups.rows[j] =
        row != nullptr ? row : InitialRowNotStored(keys[at], push, groups.NextScratchRow());
    PrefetchRow(groups.rows[j], prefetch_floats);
    PrefetchRow(position_data + size_t{at} * spec_.dim, spec_.dim);
  };
  for (uint32_t s = 0; s < num_stripes_; ++s) {
    const uint32_t begin = groups.bounds[s];
    const uint32_t end = groups.bounds[s + 1];
    if (begin == end) continue;
    std::lock_guard<std::mutex> lock(stripes_[s].mu);
    groups.PrefetchEntriesBelow(begin + 2 * kPrefetchDistance, keys, stores_);
    for (uint32_t j = begin; j < std::min(end, begin + kPrefetchDistance); ++j) look_up(j);
    for (uint32_t j = begin; j < end; ++j) {
      groups.PrefetchEntriesBelow(j + 2 * kPrefetchDistance + 1, keys, stores_);
      if (j + kPrefetchDistance < end) look_up(j + kPrefetchDistance);
      use(groups.order[j], groups.rows[j]);
    }
  }
  return Status::Ok();
}

float* EmbeddingTable::InitialRowNotStored(uint64_t key, bool push, float* row) {
  InitializeRow(spec_, key, std::span<float>(row, spec_.dim));
  optimizer_.InitState(std::span<float>(row + spec_.dim, optimizer_.state_floats()));
  counters_.Add(TableStat::kNotAdmitted);
  if (push) counters_.Add(TableStat::kUpdatesDropped);
  return row;
}

Status EmbeddingTable::Pull(std::span<const uint64_t> keys, std::span<float> out,
                            const RequestCheck& check) {
  const size_t dim = spec_.dim;
  if (out.size() != keys.size() * dim) {
    return InvalidArgument("pull from table '" + spec_.name + "': " + std::to_string(keys.size()) +
                           " keys of dim " + std::to_string(dim) + " need " +
                           std::to_string(keys.size() * dim) + " floats, got " +
                           std::to_string(out.size()));
  }
  return ForEachRequestRow(
      keys, dim,
      [&](uint32_t position, const float* row) {
        std::copy_n(row, dim, out.data() + size_t{position} * dim);
      },
      out.data(), &check, /*push_check=*/nullptr);
}

Status EmbeddingTable::Push(std::span<const uint64_t> keys, std::span<const float> grads,
                            const PushLogHook& also_log) {
  LogHookOnly check(also_log);
  return Push(keys, grads, check);
}

Status EmbeddingTable::Push(std::span<const uint64_t> keys, std::span<const float> grads,
                            PushCheck& check) {
  const size_t dim = spec_.dim;
  if (grads.size() != keys.size() * dim) {
    return InvalidArgument("push to table '" + spec_.name + "': " + std::to_string(keys.size()) +
                           " keys of dim " + std::to_string(dim) + " need " +
                           std::to_string(keys.size() * dim) + " gradient floats, got " +
                           std::to_string(grads.size()));
  }
  const uint32_t state_floats = optimizer_.state_floats();
  return ForEachRequestRow(
      keys, floats_per_row_,
      [&](uint32_t position, float* row) {
        optimizer_.Apply(std::span<float>(row, dim), std::span<float>(row + dim, state_floats),
                         grads.subspan(size_t{position} * dim, dim));
        StampUpdate(row);
      },
      grads.data(), /*pull_check=*/nullptr, &check);
}

void EmbeddingTable::ReportStats(TableStats& out) const {
  counters_.AddTo(out);
  out.rows += rows();
  out.bytes += bytes();
  out.resident_rows += tiered() ? tier_stats().resident_rows : rows();
  out.disk_bytes += disk_bytes();
  out.tracked_change_keys += tracked_change_keys();
}

uint64_t EmbeddingTable::bytes() const {
  uint64_t total = 0;
  for (uint32_t p = 0; p < num_partitions_; ++p) {
    std::lock_guard<std::mutex> lock(StripeLock(p));
    total += stores_[p].bytes();
  }
  return total + num_partitions_ * sizeof(RowStore) + num_stripes_ * sizeof(Stripe);
}

Status EmbeddingTable::ForEachRowInPartition(uint32_t partition, const RowVisitor& visit) const {
  EMBER_CHECK(partition < num_partitions_, "partition", partition, "of table", spec_.name,
              "out of range");
  std::lock_guard<std::mutex> lock(StripeLock(partition));
  return VisitPartitionLocked(partition, visit);
}

Status EmbeddingTable::ForEachRow(const RowVisitor& visit) const {
  for (uint32_t p = 0; p < num_partitions(); ++p) RETURN_IF_ERROR(ForEachRowInPartition(p, visit));
  return Status::Ok();
}

Status EmbeddingTable::Restore(uint64_t key, std::span<const float> row,
                               std::span<const float> state) {
  if (row.size() != spec_.dim || state.size() != optimizer_.state_floats()) {
    return InvalidArgument(
        "restore into table '" + spec_.name + "': row of " + std::to_string(row.size()) +
        " floats and state of " + std::to_string(state.size()) + " floats, want " +
        std::to_string(spec_.dim) + " and " + std::to_string(optimizer_.state_floats()));
  }
  const uint32_t partition = PartitionOf(key);
  if (tier_ != nullptr) return RestoreTiered(partition, key, row, state);
  std::lock_guard<std::mutex> lock(StripeLock(partition));
  auto [stored, inserted] = stores_[partition].FindOrInsert(key);
  if (inserted) rows_.fetch_add(1, std::memory_order_relaxed);
  changes_.Note(partition, key);
  std::copy(row.begin(), row.end(), stored);
  std::copy(state.begin(), state.end(), stored + spec_.dim);
  StampUpdate(stored);
  return Status::Ok();
}

Result<uint64_t> EmbeddingTable::Erase(uint32_t partition) {
  EMBER_CHECK(partition < num_partitions_, "partition", partition, "of table", spec_.name,
              "out of range");
  if (tier_ != nullptr) return EraseTiered(partition);
  std::lock_guard<std::mutex> lock(StripeLock(partition));
  changes_.Forget(partition);
  const size_t erased = stores_[partition].size();
  stores_[partition].Clear();
  rows_.fetch_sub(erased, std::memory_order_relaxed);
  return uint64_t{erased};
}

}  // namespace ember::embedding
