// The table's own rows without the table: see table_rows.h.
#include "bench/internal/table_rows.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <span>
#include <string>

#include "bench/internal/phase.h"
#include "bench/internal/row_passes.h"
#include "common/hash.h"
#include "embedding/optimizer.h"
#include "embedding/striped_rows.h"
#include "trainer/zipf.h"

namespace ember::bench {
namespace {

// 0.0115 for every weight and gradient: normal numbers for every optimizer's arithmetic.
constexpr float kValue = 0.0115f;

// The row of `key`, created (weights kValue, `state` after them) when the store has none. The
// stores are this thread's alone, so no stripe lock is taken.
float* RowOf(embedding::StripedRows& rows, uint64_t table_id, uint64_t key,
             const std::vector<float>& state, uint32_t dim) {
  const uint32_t partition = PartitionOf(table_id, key, rows.num_partitions());
  auto [row, inserted] = rows.store(partition).FindOrInsert(key);
  if (inserted) {
    std::fill_n(row, dim, kValue);
    std::copy(state.begin(), state.end(), row + dim);
  }
  return row;
}

struct FoundRows {
  embedding::StripedRows rows;
  std::vector<std::vector<float*>> batches;  // the row of each key of each batch
  // Each batch's positions grouped by stripe, as the table orders a request's keys.
  std::vector<std::vector<uint32_t>> orders;
};

// Each key's partition and row, for FindAndUse.
struct IndexScratch {
  std::vector<uint32_t> partition;
  std::vector<float*> row;
};

// Calls use(position, row) for the keys of `keys` in `order` (the table's order: grouped by
// stripe), finding each row through the stores' index as the table's requests do
// (embedding/striped_rows.h): the index entry prefetched 2 * kPrefetchDistance keys ahead, the row
// found and its first `prefetch_floats` prefetched (embedding::PrefetchRow) kPrefetchDistance keys
// ahead. Every key has a row (CreateAndFind made them).
template <typename Use>
void FindAndUse(embedding::StripedRows& rows, uint64_t table_id, const KeyBatch& keys,
                std::span<const uint32_t> order, size_t prefetch_floats, IndexScratch& scratch,
                Use&& use) {
  constexpr size_t kRowAhead = embedding::kPrefetchDistance;
  constexpr size_t kEntryAhead = 2 * kRowAhead;
  const size_t n = order.size();
  const auto prefetch_entry = [&](size_t at) {
    scratch.partition[at] = PartitionOf(table_id, keys[at], rows.num_partitions());
    rows.stores()[scratch.partition[at]].Prefetch(keys[at]);
  };
  const auto find_row = [&](size_t at) {
    scratch.row[at] = rows.store(scratch.partition[at]).Find(keys[at]);
    embedding::PrefetchRow(scratch.row[at], prefetch_floats);
  };
  for (size_t j = 0; j < std::min(n, kEntryAhead); ++j) prefetch_entry(order[j]);
  for (size_t j = 0; j < std::min(n, kRowAhead); ++j) find_row(order[j]);
  for (size_t j = 0; j < n; ++j) {
    if (j + kEntryAhead < n) prefetch_entry(order[j + kEntryAhead]);
    if (j + kRowAhead < n) find_row(order[j + kRowAhead]);
    use(order[j], scratch.row[order[j]]);
  }
}

// Creates the `created` rows rank after rank, then finds each batch's rows and orders its keys.
void CreateAndFind(const BenchOptions& config, const TableSpec& spec, uint64_t created,
                   const embedding::RowOptimizer& optimizer, const std::vector<KeyBatch>& batches,
                   FoundRows& found) {
  const trainer::ZipfSampler sampler(config.vocabulary, config.exponent, true, config.seed);
  const uint64_t table_id = HashName(spec.name);
  std::vector<float> state(optimizer.state_floats());
  optimizer.InitState(state);
  for (uint64_t rank = 0; rank < created; ++rank) {
    RowOf(found.rows, table_id, sampler.KeyOfRank(rank), state, spec.dim);
  }
  for (const KeyBatch& keys : batches) {
    std::vector<float*>& rows = found.batches.emplace_back();
    rows.reserve(keys.size());
    for (uint64_t key : keys) rows.push_back(RowOf(found.rows, table_id, key, state, spec.dim));
    found.orders.push_back(embedding::GroupByStripe(keys, table_id, found.rows).order);
  }
}

// The four passes, alternating in `rounds` rounds of about `seconds` in all: a pull's copy and a
// push's update, of rows found beforehand and of rows found through the index. Medians.
TableRowsFigures TimePasses(const TableSpec& spec, const embedding::RowOptimizer& optimizer,
                            const std::vector<KeyBatch>& batches, double seconds, uint32_t rounds,
                            FoundRows& found) {
  size_t longest = 0;
  for (const KeyBatch& keys : batches) longest = std::max(longest, keys.size());
  std::vector<float> out(longest * spec.dim);
  const std::vector<float> grads(longest * spec.dim, kValue);
  IndexScratch scratch{std::vector<uint32_t>(longest), std::vector<float*>(longest)};
  const uint64_t table_id = HashName(spec.name);
  const size_t copy_bytes = size_t{spec.dim} * sizeof(float);
  const size_t row_floats = spec.dim + optimizer.state_floats();
  const auto copy_to_out = [&](size_t i, const float* row) {
    std::memcpy(out.data() + i * spec.dim, row, copy_bytes);
  };
  const auto update = [&](size_t i, float* row) {
    UpdateRow(optimizer, row, grads.data() + i * spec.dim);
  };
  const auto keys_of = [&](size_t b) { return batches[b].size(); };
  size_t next_batch = 0;
  std::vector<double> copied, updated, found_copied, found_updated;
  const double share = seconds / 4 / rounds;
  const auto time = [&](std::vector<double>& figures, auto&& pass) {
    figures.push_back(NanosecondsPerKey(batches.size(), share, &next_batch, keys_of, pass));
  };
  for (uint32_t round = 0; round < rounds; ++round) {
    time(copied, [&](size_t b) {
      const std::vector<float*>& rows = found.batches[b];
      GatherRows<true>(
          rows.size(), [&](size_t i) { return rows[i]; }, spec.dim, out.data());
    });
    time(updated, [&](size_t b) {
      const std::vector<float*>& rows = found.batches[b];
      UpdateRows(
          rows.size(), [&](size_t i) { return rows[i]; }, optimizer, grads.data());
    });
    time(found_copied, [&](size_t b) {
      FindAndUse(found.rows, table_id, batches[b], found.orders[b], spec.dim, scratch, copy_to_out);
    });
    time(found_updated, [&](size_t b) {
      FindAndUse(found.rows, table_id, batches[b], found.orders[b], row_floats, scratch, update);
    });
  }
  static volatile float sink;  // the copies and updates are used: none may be left out
  sink = out[out.size() / 2] + found.batches.front().front()[0];
  (void)sink;
  return TableRowsFigures{.ns_per_copy = Median(copied),
                          .ns_per_update = Median(updated),
                          .ns_per_indexed_copy = Median(found_copied),
                          .ns_per_indexed_update = Median(found_updated)};
}

}  // namespace

Result<TableRowsFigures> MeasureTableRows(const BenchOptions& config, const TableSpec& spec,
                                          uint64_t rows, uint32_t partitions,
                                          const std::vector<KeyBatch>& batches, double seconds,
                                          uint32_t rounds) {
  if (batches.empty() || rounds == 0 || partitions == 0) {
    return InvalidArgument("table rows: needs key batches, rounds and partitions");
  }
  ASSIGN_OR_RETURN(const embedding::RowOptimizer optimizer,
                   embedding::RowOptimizer::Create(spec.optimizer, spec.dim));
  FoundRows found{embedding::StripedRows(partitions, spec.dim + optimizer.state_floats()), {}, {}};
  try {
    CreateAndFind(config, spec, rows, optimizer, batches, found);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(
        "table rows: no memory for the table's " + std::to_string(rows) + " rows of " +
        std::to_string((spec.dim + optimizer.state_floats()) * sizeof(float)) + " bytes");
  }
  TableRowsFigures figures = TimePasses(spec, optimizer, batches, seconds, rounds, found);
  for (uint32_t p = 0; p < found.rows.num_partitions(); ++p) {
    figures.rows += found.rows.store(p).size();
  }
  return figures;
}

}  // namespace ember::bench
