// EmbeddingTable: pull and push over the rows in memory (StripedRows), or through the tier, and
// the operations on single rows and whole partitions.
#include "embedding/embedding_table.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>

#include "common/check.h"
#include "common/hash.h"
#include "embedding/table_config.h"

namespace ember::embedding {

namespace {

RowOptimizer MakeOptimizer(const TableSpec& spec) {
  Status valid = ValidateTableSpec(spec);
  EMBER_CHECK(valid.ok(), valid.ToString());
  Result<RowOptimizer> optimizer = RowOptimizer::Create(spec.optimizer, spec.dim);
  EMBER_CHECK(optimizer.ok(), optimizer.status().ToString());
  return *optimizer;
}

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

EmbeddingTable::EmbeddingTable(const TableSpec& spec, uint32_t num_partitions)
    : EmbeddingTable(spec, num_partitions, /*tiered=*/false) {}

EmbeddingTable::EmbeddingTable(const TableSpec& spec, uint32_t num_partitions, bool tiered)
    : spec_(spec),
      table_id_(HashName(spec.name)),
      optimizer_(MakeOptimizer(spec)),
      floats_per_row_(PersistedFloatsPerRow(spec)),
      new_rows_(spec_, optimizer_, counters_),
      memory_(num_partitions, floats_per_row_ + (tiered ? 1 : 0)),
      changes_(num_partitions, [this](uint32_t p) { return PartitionRowsLocked(p); }) {
  EMBER_CHECK(num_partitions >= 1, "table", spec.name, "needs at least one partition");
}

EmbeddingTable::~EmbeddingTable() = default;

Result<std::unique_ptr<EmbeddingTable>> EmbeddingTable::Create(const TableSpec& spec,
                                                               uint32_t num_partitions,
                                                               const TierOptions& tier) {
  if (tier.disk == nullptr) return std::make_unique<EmbeddingTable>(spec, num_partitions);
  std::unique_ptr<EmbeddingTable> table(new EmbeddingTable(spec, num_partitions, true));
  ASSIGN_OR_RETURN(table->tier_, DiskTier::Open(tier, table->TierView()));
  table->look_ahead_ = std::make_unique<LookAhead>(*table->tier_);
  return table;
}

TierTable EmbeddingTable::TierView() {
  return TierTable{spec_.name, table_id_,  spec_.dim, floats_per_row_, memory_,
                   new_rows_,  changes_,   row_count_, counters_};
}

uint32_t EmbeddingTable::PartitionOf(uint64_t key) const {
  return ember::PartitionOf(table_id_, key, num_partitions());
}

uint32_t EmbeddingTable::PersistedFloatsPerRow(const TableSpec& spec) {
  auto optimizer = RowOptimizer::Create(spec.optimizer, spec.dim);
  EMBER_CHECK(optimizer.ok(), optimizer.status().ToString());
  return spec.dim + optimizer->state_floats() + (spec.ttl_seconds > 0 ? 1 : 0);
}

float* EmbeddingTable::FindOrCreateRow(uint32_t partition, uint64_t key) {
  RowStore& store = memory_.store(partition);
  if (new_rows_.admits_by_count()) {
    if (float* row = store.Find(key)) return row;
    if (!new_rows_.Admit(key)) return nullptr;
  }
  auto [row, inserted] = store.FindOrInsert(key);
  if (inserted) {
    new_rows_.Init(key, row);
    row_count_.fetch_add(1, std::memory_order_relaxed);
    changes_.Note(partition, key);
  }
  return row;
}

template <typename Use>
Status EmbeddingTable::ForEachRequestRow(std::span<const uint64_t> keys, size_t prefetch_floats,
                                         Use&& use, const float* position_data,
                                         const RequestCheck* pull_check, PushCheck* push_check) {
  RequestGroups& groups = GroupByStripe(keys, table_id_, memory_);
  const bool push = push_check != nullptr;
  if (push) {
    ASSIGN_OR_RETURN(const PushCheck::Verdict verdict, push_check->Check(keys, groups.partition));
    if (verdict == PushCheck::Verdict::kSkip) return Status::Ok();
  } else if (pull_check != nullptr && *pull_check) {
    RETURN_IF_ERROR((*pull_check)(keys, groups.partition));
  }
  if (new_rows_.admits_by_count()) groups.ReserveScratch(keys.size(), memory_.row_floats());
  if (tier_ != nullptr) {
    return tier_->ForEachRequestRow(keys, groups, use, position_data, push_check);
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
        row != nullptr ? row : new_rows_.NotAdmitted(keys[at], push, groups.NextScratchRow());
    PrefetchRow(groups.rows[j], prefetch_floats);
    if (position_data != nullptr) PrefetchRow(position_data + size_t{at} * spec_.dim, spec_.dim);
  };
  const std::span<const RowStore> stores = memory_.stores();
  for (uint32_t s = 0; s < memory_.num_stripes(); ++s) {
    const uint32_t begin = groups.begin(s);
    const uint32_t end = groups.end(s);
    if (begin == end) continue;
    std::lock_guard<std::mutex> lock(memory_.StripeMutex(s));
    groups.PrefetchEntriesBelow(begin + 2 * kPrefetchDistance, keys, stores);
    for (uint32_t j = begin; j < std::min(end, begin + kPrefetchDistance); ++j) look_up(j);
    for (uint32_t j = begin; j < end; ++j) {
      groups.PrefetchEntriesBelow(j + 2 * kPrefetchDistance + 1, keys, stores);
      if (j + kPrefetchDistance < end) look_up(j + kPrefetchDistance);
      use(groups.order[j], groups.rows[j]);
    }
  }
  return Status::Ok();
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
      /*position_data=*/nullptr, &check, /*push_check=*/nullptr);
}

Status EmbeddingTable::Push(std::span<const uint64_t> keys, std::span<const float> grads,
                            const PushLogHook& also_log, float learning_rate) {
  LogHookOnly check(also_log);
  return Push(keys, grads, check, learning_rate);
}

Status EmbeddingTable::Push(std::span<const uint64_t> keys, std::span<const float> grads,
                            PushCheck& check, float learning_rate) {
  const size_t dim = spec_.dim;
  if (grads.size() != keys.size() * dim) {
    return InvalidArgument("push to table '" + spec_.name + "': " + std::to_string(keys.size()) +
                           " keys of dim " + std::to_string(dim) + " need " +
                           std::to_string(keys.size() * dim) + " gradient floats, got " +
                           std::to_string(grads.size()));
  }
  const uint32_t state_floats = optimizer_.state_floats();
  const float lr = learning_rate > 0 ? learning_rate : spec_.optimizer.learning_rate;
  return ForEachRequestRow(
      keys, floats_per_row_,
      [&](uint32_t position, float* row) {
        optimizer_.Apply(std::span<float>(row, dim), std::span<float>(row + dim, state_floats),
                         grads.subspan(size_t{position} * dim, dim), lr);
        new_rows_.StampUpdate(row);
      },
      grads.data(), /*pull_check=*/nullptr, &check);
}

bool EmbeddingTable::logs_pushes() const { return tier_ != nullptr && tier_->logs_pushes(); }

void EmbeddingTable::ReportStats(TableStats& out) const {
  counters_.AddTo(out);
  out.rows += rows();
  out.bytes += bytes();
  out.resident_rows += tiered() ? tier_stats().resident_rows : rows();
  out.disk_bytes += disk_bytes();
  out.tracked_change_keys += tracked_change_keys();
}

uint64_t EmbeddingTable::bytes() const { return memory_.bytes(); }

uint64_t EmbeddingTable::disk_bytes() const { return tier_ == nullptr ? 0 : tier_->disk_bytes(); }

TierStats EmbeddingTable::tier_stats() const {
  return tier_ == nullptr ? TierStats{} : tier_->stats();
}

Status EmbeddingTable::ForEachRowInPartition(uint32_t partition, const RowVisitor& visit) const {
  EMBER_CHECK(partition < num_partitions(), "partition", partition, "of table", spec_.name,
              "out of range");
  std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
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
  if (tier_ != nullptr) return tier_->Restore(partition, key, row, state);
  std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
  auto [stored, inserted] = memory_.store(partition).FindOrInsert(key);
  if (inserted) row_count_.fetch_add(1, std::memory_order_relaxed);
  changes_.Note(partition, key);
  std::copy(row.begin(), row.end(), stored);
  std::copy(state.begin(), state.end(), stored + spec_.dim);
  new_rows_.StampUpdate(stored);
  return Status::Ok();
}

Result<uint64_t> EmbeddingTable::Erase(uint32_t partition) {
  EMBER_CHECK(partition < num_partitions(), "partition", partition, "of table", spec_.name,
              "out of range");
  {
    std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
    changes_.DropFollowers(partition);
  }
  if (tier_ != nullptr) return tier_->Erase(partition);
  std::lock_guard<std::mutex> lock(memory_.LockOf(partition));
  changes_.Forget(partition);
  RowStore& store = memory_.store(partition);
  const size_t erased = store.size();
  store.Clear();
  row_count_.fetch_sub(erased, std::memory_order_relaxed);
  return uint64_t{erased};
}

Status EmbeddingTable::FlushDirtyRows() {
  return tier_ == nullptr ? Status::Ok() : tier_->FlushDirtyRows();
}

Status EmbeddingTable::RecountRows() {
  return tier_ == nullptr ? Status::Ok() : tier_->RecountRows();
}

Result<size_t> EmbeddingTable::Prefetch(uint64_t hint, std::span<const uint64_t> keys,
                                        std::chrono::steady_clock::time_point expires) {
  if (look_ahead_ == nullptr) return size_t{0};
  return look_ahead_->Prefetch(hint, keys, expires);
}

bool EmbeddingTable::ReleaseHint(uint64_t hint) {
  return look_ahead_ != nullptr && look_ahead_->ReleaseHint(hint);
}

size_t EmbeddingTable::ReleaseExpiredHints(std::chrono::steady_clock::time_point now) {
  return look_ahead_ == nullptr ? 0 : look_ahead_->ReleaseExpiredHints(now);
}

PrefetchStats EmbeddingTable::prefetch_stats() const {
  return look_ahead_ == nullptr ? PrefetchStats{} : look_ahead_->stats();
}

}  // namespace ember::embedding
