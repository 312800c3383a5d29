// StripedRows: a table's partitions in memory under lock stripes, and a request's keys grouped by
// stripe.
#include "embedding/striped_rows.h"

#include <bit>

#include "common/hash.h"

namespace ember::embedding {
namespace {

// Lock stripes per table: enough that threads rarely meet, few enough that a request's keys form
// long runs per stripe for the prefetcher.
constexpr uint32_t kMaxLockStripes = 64;

}  // namespace

StripedRows::StripedRows(uint32_t num_partitions, uint32_t row_floats)
    : row_floats_(row_floats),
      num_stripes_(std::bit_floor(std::clamp(num_partitions, 1u, kMaxLockStripes))),
      stripes_(std::make_unique<Stripe[]>(num_stripes_)) {
  stores_.reserve(num_partitions);
  for (uint32_t p = 0; p < num_partitions; ++p) stores_.emplace_back(row_floats);
}

uint64_t StripedRows::bytes() const {
  uint64_t total = 0;
  for (uint32_t p = 0; p < num_partitions(); ++p) {
    std::lock_guard<std::mutex> lock(LockOf(p));
    total += stores_[p].bytes();
  }
  return total + num_partitions() * sizeof(RowStore) + num_stripes_ * sizeof(Stripe);
}

RequestGroups& GroupByStripe(std::span<const uint64_t> keys, uint64_t table_id,
                             const StripedRows& rows) {
  const uint32_t num_stripes = rows.num_stripes();
  const uint32_t num_partitions = rows.num_partitions();
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

}  // namespace ember::embedding
