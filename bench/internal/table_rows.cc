// The table's own rows without the table: see table_rows.h.
#include "bench/internal/table_rows.h"

#include <algorithm>
#include <new>
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
};

// Creates the `created` rows rank after rank, then finds each batch's rows.
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
  }
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
  FoundRows found{embedding::StripedRows(partitions, spec.dim + optimizer.state_floats()), {}};
  try {
    CreateAndFind(config, spec, rows, optimizer, batches, found);
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(
        "table rows: no memory for the table's " + std::to_string(rows) + " rows of " +
        std::to_string((spec.dim + optimizer.state_floats()) * sizeof(float)) + " bytes");
  }
  size_t longest = 0;
  for (const KeyBatch& keys : batches) longest = std::max(longest, keys.size());
  std::vector<float> out(longest * spec.dim);
  const std::vector<float> grads(longest * spec.dim, kValue);
  const auto keys_of = [&](size_t b) { return found.batches[b].size(); };
  size_t next_batch = 0;
  std::vector<double> copied, updated;
  const double share = seconds / 2 / rounds;
  for (uint32_t round = 0; round < rounds; ++round) {
    copied.push_back(NanosecondsPerKey(batches.size(), share, &next_batch, keys_of, [&](size_t b) {
      const std::vector<float*>& rows = found.batches[b];
      GatherRows<true>(
          rows.size(), [&](size_t i) { return rows[i]; }, spec.dim, out.data());
    }));
    updated.push_back(NanosecondsPerKey(batches.size(), share, &next_batch, keys_of, [&](size_t b) {
      const std::vector<float*>& rows = found.batches[b];
      UpdateRows(
          rows.size(), [&](size_t i) { return rows[i]; }, optimizer, grads.data());
    }));
  }
  static volatile float sink;  // the copies and updates are used: none may be left out
  sink = out[out.size() / 2] + found.batches.front().front()[0];
  (void)sink;
  uint64_t held = 0;
  for (uint32_t p = 0; p < found.rows.num_partitions(); ++p) held += found.rows.store(p).size();
  return TableRowsFigures{
      .rows = held, .ns_per_copy = Median(copied), .ns_per_update = Median(updated)};
}

}  // namespace ember::bench
