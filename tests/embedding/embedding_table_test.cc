// Tests for EmbeddingTable: pull/push semantics, size checks, concurrency, and row transfer.
#include "embedding/embedding_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <latch>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "common/hash.h"
#include "embedding/initializer.h"

namespace ember::embedding {
namespace {

TableSpec SgdSpec(uint32_t dim = 4, float learning_rate = 0.1f) {
  TableSpec spec;
  spec.name = "user_id";
  spec.dim = dim;
  spec.seed = 17;
  spec.optimizer.kind = OptimizerKind::kSgd;
  spec.optimizer.learning_rate = learning_rate;
  return spec;
}

TableSpec AdagradSpec() {
  TableSpec spec = SgdSpec(3);
  spec.name = "item_id";
  spec.optimizer.kind = OptimizerKind::kAdagrad;
  spec.optimizer.initial_accumulator = 0.1f;
  return spec;
}

std::vector<float> Pull(EmbeddingTable& table, const std::vector<uint64_t>& keys) {
  std::vector<float> out(keys.size() * table.dim());
  Status status = table.Pull(keys, out);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out;
}

// A table of zero rows trained by SGD at learning rate 0.5 with gradients of 1: every value stays
// exact in float, so results must not depend on how threads interleave.
TableSpec ExactSgdSpec(uint32_t dim) {
  TableSpec spec = SgdSpec(dim, 0.5f);
  spec.initializer.kind = InitializerKind::kZeros;
  return spec;
}

// Runs `threads` threads at once, each pushing gradients of 1 to batch_keys(t, i) and pulling
// them back for every i < iterations, on a table of ExactSgdSpec. Then every row must be -0.5
// times its pushes, and no pulled row may ever have been half-updated.
void ExpectExactConcurrentSgd(
    EmbeddingTable& table, int threads, int iterations,
    const std::function<std::vector<uint64_t>(int thread, int iteration)>& batch_keys) {
  const uint32_t dim = table.dim();
  std::map<uint64_t, int> expected_pushes;
  for (int t = 0; t < threads; ++t) {
    for (int it = 0; it < iterations; ++it) {
      for (uint64_t key : batch_keys(t, it)) ++expected_pushes[key];
    }
  }
  std::latch start(threads);
  std::vector<std::thread> workers;
  std::vector<int> torn_rows(threads, 0);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int it = 0; it < iterations; ++it) {
        const std::vector<uint64_t> keys = batch_keys(t, it);
        const std::vector<float> grads(keys.size() * dim, 1.0f);
        EXPECT_TRUE(table.Push(keys, grads).ok());
        std::vector<float> out(keys.size() * dim);
        EXPECT_TRUE(table.Pull(keys, out).ok());
        for (size_t k = 0; k < keys.size(); ++k) {
          for (uint32_t i = 1; i < dim; ++i) {
            // Every push changes all coordinates together; a pulled row is never half-updated.
            if (out[k * dim + i] != out[k * dim]) ++torn_rows[t];
          }
        }
      }
    });
  }
  for (std::thread& worker : workers) worker.join();

  for (int t = 0; t < threads; ++t) EXPECT_EQ(torn_rows[t], 0);
  EXPECT_EQ(table.rows(), expected_pushes.size());
  std::vector<uint64_t> all;
  for (const auto& [key, pushes] : expected_pushes) all.push_back(key);
  const std::vector<float> rows = Pull(table, all);
  for (size_t i = 0; i < all.size(); ++i) {
    const float expected = -0.5f * static_cast<float>(expected_pushes[all[i]]);
    for (uint32_t d = 0; d < dim; ++d) ASSERT_EQ(rows[i * dim + d], expected) << all[i];
  }
}

TEST(EmbeddingTableTest, PartitionOfUsesTheTableNameHash) {
  EmbeddingTable table(SgdSpec(), 13);
  EXPECT_EQ(table.num_partitions(), 13u);
  for (uint64_t key : {uint64_t{0}, uint64_t{1}, uint64_t{987654321}, UINT64_MAX}) {
    EXPECT_EQ(table.PartitionOf(key), PartitionOf(HashName("user_id"), key, 13));
  }
}

TEST(EmbeddingTableTest, PartitionsArePowersOfTwoMasksAndOtherCountsModuli) {
  // PartitionOf takes a mask for power-of-two counts: it must agree with the definition (the
  // hash modulo the count), or rows would land in other partitions than checkpoints recorded.
  const uint64_t table_id = HashName("user_id");
  for (uint32_t partitions : {1u, 2u, 10u, 13u, 64u, 1000u, 1024u, 65536u}) {
    for (uint64_t key = 0; key < 5000; ++key) {
      const uint64_t spread = key * 0x9e3779b97f4a7c15ULL;  // large keys too
      for (uint64_t k : {key, spread, UINT64_MAX - key}) {
        ASSERT_EQ(PartitionOf(table_id, k, partitions), HashCombine(table_id, k) % partitions)
            << partitions << " partitions, key " << k;
      }
    }
  }
}

TEST(EmbeddingTableTest, RequestCheckSeesEachKeysPartitionAndCanRefuse) {
  EmbeddingTable table(SgdSpec(), 10);
  const std::vector<uint64_t> keys = {5, 77, 5, 123456789, 0, UINT64_MAX};
  std::vector<float> out(keys.size() * table.dim());
  std::vector<uint32_t> seen;
  const EmbeddingTable::RequestCheck record = [&](std::span<const uint64_t> checked,
                                                  std::span<const uint32_t> partitions) {
    EXPECT_EQ(checked.size(), partitions.size());
    for (size_t i = 0; i < checked.size(); ++i) {
      EXPECT_EQ(partitions[i], table.PartitionOf(checked[i])) << checked[i];
    }
    seen.assign(partitions.begin(), partitions.end());
    return Status::Ok();
  };
  ASSERT_TRUE(table.Pull(keys, out, record).ok());
  EXPECT_EQ(seen.size(), keys.size());
  EXPECT_EQ(out, Pull(table, keys));

  EmbeddingTable fresh(SgdSpec(), 10);
  const EmbeddingTable::RequestCheck refuse = [](std::span<const uint64_t>,
                                                 std::span<const uint32_t>) {
    return FailedPrecondition("not mine");
  };
  std::vector<float> untouched(keys.size() * fresh.dim(), 42.0f);
  Status refused = fresh.Pull(keys, untouched, refuse);
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.message(), "not mine");
  EXPECT_EQ(fresh.rows(), 0u) << "a refused pull created rows";
  for (float value : untouched) EXPECT_EQ(value, 42.0f);
}

// A PushCheck that records what it saw and answers `answer`.
class ScriptedPushCheck final : public EmbeddingTable::PushCheck {
 public:
  explicit ScriptedPushCheck(Result<Verdict> answer) : answer_(std::move(answer)) {}
  Result<Verdict> Check(std::span<const uint64_t> keys,
                        std::span<const uint32_t> partitions) override {
    ++checks;
    seen_keys.assign(keys.begin(), keys.end());
    seen_partitions.assign(partitions.begin(), partitions.end());
    return answer_;
  }
  void AppendWrites(RowWrites&) override { ++appends; }

  int checks = 0;
  int appends = 0;
  std::vector<uint64_t> seen_keys;
  std::vector<uint32_t> seen_partitions;

 private:
  Result<Verdict> answer_;
};

TEST(EmbeddingTableTest, PushCheckSeesEachKeysPartitionAndCanApplySkipOrRefuse) {
  using Verdict = EmbeddingTable::PushCheck::Verdict;
  const std::vector<uint64_t> keys = {5, 77, 5, 123456789, 0, UINT64_MAX};
  const std::vector<float> grads(keys.size() * SgdSpec().dim, 1.0f);

  EmbeddingTable applied(SgdSpec(), 10);
  EmbeddingTable reference(SgdSpec(), 10);
  ScriptedPushCheck apply(Verdict::kApply);
  ASSERT_TRUE(applied.Push(keys, grads, apply).ok());
  ASSERT_TRUE(reference.Push(keys, grads).ok());
  EXPECT_EQ(apply.checks, 1);
  EXPECT_EQ(apply.seen_keys, keys);
  ASSERT_EQ(apply.seen_partitions.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(apply.seen_partitions[i], applied.PartitionOf(keys[i])) << keys[i];
  }
  EXPECT_EQ(apply.appends, 0) << "an in-memory table logs nothing";
  EXPECT_EQ(Pull(applied, keys), Pull(reference, keys));

  // Skipped: OK, and nothing created or changed.
  EmbeddingTable skipped(SgdSpec(), 10);
  ScriptedPushCheck skip(Verdict::kSkip);
  ASSERT_TRUE(skipped.Push(keys, grads, skip).ok());
  EXPECT_EQ(skip.checks, 1);
  EXPECT_EQ(skipped.rows(), 0u) << "a skipped push created rows";
  ASSERT_TRUE(applied.Push(keys, grads, skip).ok());
  EXPECT_EQ(Pull(applied, keys), Pull(reference, keys)) << "a skipped push changed rows";

  // Refused: the check's error, and nothing created.
  EmbeddingTable refused(SgdSpec(), 10);
  ScriptedPushCheck refuse(FailedPrecondition("not mine"));
  Status status = refused.Push(keys, grads, refuse);
  EXPECT_EQ(status.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "not mine");
  EXPECT_EQ(refused.rows(), 0u) << "a refused push created rows";

  // A push of the wrong size is refused before the check runs.
  ScriptedPushCheck unused(Verdict::kApply);
  EXPECT_EQ(refused.Push(keys, std::vector<float>(3), unused).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(unused.checks, 0);
}

TEST(EmbeddingTableTest, GrowingTablesUnderConcurrentRequestsLoseNoUpdate) {
  // Four threads push and pull batches that span every lock stripe while new keys keep growing
  // the partitions' indexes: a request prefetches index entries of stripes it has not locked
  // yet, as other threads grow them. 10 partitions (8 stripes).
  EmbeddingTable table(ExactSgdSpec(4), 10);
  constexpr uint64_t kBatch = 200;
  // Iteration i of thread t touches keys [i * 50 + t * 7, + kBatch): the key space grows as the
  // threads go, and neighbouring threads overlap.
  ExpectExactConcurrentSgd(table, /*threads=*/4, /*iterations=*/1500, [](int thread, int iteration) {
    std::vector<uint64_t> keys;
    for (uint64_t j = 0; j < kBatch; ++j) keys.push_back(iteration * 50 + thread * 7 + j);
    return keys;
  });
}

TEST(EmbeddingTableTest, PullCreatesRowsDeterministically) {
  const TableSpec spec = SgdSpec();
  EmbeddingTable table(spec, 8);
  EXPECT_EQ(table.rows(), 0u);
  const std::vector<uint64_t> keys = {5, 0, UINT64_MAX, 5};
  const std::vector<float> first = Pull(table, keys);
  EXPECT_EQ(table.rows(), 3u);
  for (size_t i = 0; i < keys.size(); ++i) {
    std::vector<float> expected(spec.dim);
    InitializeRow(spec, keys[i], expected);
    EXPECT_EQ(std::vector<float>(first.begin() + i * spec.dim, first.begin() + (i + 1) * spec.dim),
              expected);
  }
  EXPECT_EQ(Pull(table, keys), first);
  EXPECT_EQ(table.rows(), 3u);
  EXPECT_GE(table.bytes(), 3u * spec.dim * sizeof(float));
}

TEST(EmbeddingTableTest, PushAppliesSgdExactly) {
  const TableSpec spec = SgdSpec(2, 0.25f);
  EmbeddingTable table(spec, 4);
  const std::vector<uint64_t> keys = {10, 20};
  const std::vector<float> before = Pull(table, keys);
  const std::vector<float> grads = {1.0f, -2.0f, 0.5f, 4.0f};
  ASSERT_TRUE(table.Push(keys, grads).ok());
  const std::vector<float> after = Pull(table, keys);
  for (size_t i = 0; i < grads.size(); ++i) {
    float expected = before[i];
    expected -= 0.25f * grads[i];
    EXPECT_FLOAT_EQ(after[i], expected) << i;
  }
}

TEST(EmbeddingTableTest, PushCreatesMissingRowsFromTheInitializer) {
  const TableSpec spec = SgdSpec(3, 0.5f);
  EmbeddingTable table(spec, 2);
  const std::vector<uint64_t> keys = {99};
  ASSERT_TRUE(table.Push(keys, std::vector<float>{2.0f, 0.0f, -2.0f}).ok());
  EXPECT_EQ(table.rows(), 1u);
  std::vector<float> initial(3);
  InitializeRow(spec, 99, initial);
  const std::vector<float> row = Pull(table, keys);
  EXPECT_FLOAT_EQ(row[0], initial[0] - 1.0f);
  EXPECT_FLOAT_EQ(row[1], initial[1]);
  EXPECT_FLOAT_EQ(row[2], initial[2] + 1.0f);
}

TEST(EmbeddingTableTest, DuplicateKeysInOnePushApplyInOrder) {
  // Adagrad is order-sensitive: one push with a key twice must equal two pushes.
  EmbeddingTable together(AdagradSpec(), 4);
  EmbeddingTable apart(AdagradSpec(), 4);
  const std::vector<float> g1 = {1.0f, -0.5f, 2.0f};
  const std::vector<float> g2 = {-3.0f, 0.25f, 0.0f};
  std::vector<float> both = g1;
  both.insert(both.end(), g2.begin(), g2.end());
  ASSERT_TRUE(together.Push(std::vector<uint64_t>{7, 7}, both).ok());
  ASSERT_TRUE(apart.Push(std::vector<uint64_t>{7}, g1).ok());
  ASSERT_TRUE(apart.Push(std::vector<uint64_t>{7}, g2).ok());
  EXPECT_EQ(Pull(together, {7}), Pull(apart, {7}));
  EXPECT_EQ(together.rows(), 1u);
}

TEST(EmbeddingTableTest, SizeMismatchIsInvalidArgumentAndChangesNothing) {
  EmbeddingTable table(SgdSpec(4), 4);
  const std::vector<uint64_t> keys = {1, 2};
  std::vector<float> short_out(7);
  Status pull = table.Pull(keys, short_out);
  EXPECT_EQ(pull.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(pull.message().find("user_id"), std::string_view::npos);
  std::vector<float> long_grads(9, 1.0f);
  EXPECT_EQ(table.Push(keys, long_grads).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table.rows(), 0u);
  // Empty requests are fine.
  EXPECT_TRUE(table.Pull({}, {}).ok());
  EXPECT_TRUE(table.Push({}, {}).ok());
}

TEST(EmbeddingTableTest, ConcurrentPullAndPushGiveTheExactSgdResult) {
  // Four threads on 64 keys in 16 partitions, with a duplicate key in every batch.
  EmbeddingTable table(ExactSgdSpec(8), 16);
  constexpr uint64_t kKeys = 64;
  constexpr uint64_t kBatch = 16;
  ExpectExactConcurrentSgd(table, /*threads=*/4, /*iterations=*/2000, [](int thread, int iteration) {
    std::vector<uint64_t> keys;
    for (uint64_t j = 0; j < kBatch; ++j) keys.push_back((thread * 5 + iteration * 3 + j) % kKeys);
    keys.push_back(keys.front());  // a duplicate in every batch
    return keys;
  });
  EXPECT_EQ(table.rows(), kKeys);
}

TEST(EmbeddingTableTest, ForEachRowAndRestoreCopyATable) {
  EmbeddingTable source(AdagradSpec(), 8);
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 100; ++k) keys.push_back(Mix64(k));
  std::vector<float> grads(keys.size() * 3);
  for (size_t i = 0; i < grads.size(); ++i) grads[i] = std::sin(static_cast<float>(i));
  ASSERT_TRUE(source.Push(keys, grads).ok());

  EmbeddingTable copy(AdagradSpec(), 3);  // a different partition count
  size_t visited = 0;
  ASSERT_TRUE(source
                  .ForEachRow([&](uint64_t key, std::span<const float> row,
                                  std::span<const float> state) {
                    ++visited;
                    EXPECT_EQ(row.size(), 3u);
                    EXPECT_EQ(state.size(), 3u);
                    EXPECT_TRUE(copy.Restore(key, row, state).ok());
                  })
                  .ok());
  EXPECT_EQ(visited, 100u);
  EXPECT_EQ(copy.rows(), 100u);
  EXPECT_EQ(Pull(copy, keys), Pull(source, keys));

  // The optimizer state came along: further identical pushes keep the tables identical.
  ASSERT_TRUE(source.Push(keys, grads).ok());
  ASSERT_TRUE(copy.Push(keys, grads).ok());
  EXPECT_EQ(Pull(copy, keys), Pull(source, keys));
}

TEST(EmbeddingTableTest, RestoreOverwritesAndChecksSizes) {
  EmbeddingTable table(AdagradSpec(), 4);
  const std::vector<float> row = {1.0f, 2.0f, 3.0f};
  const std::vector<float> state = {0.5f, 0.5f, 0.5f};
  ASSERT_TRUE(table.Restore(42, row, state).ok());
  EXPECT_EQ(Pull(table, {42}), row);
  const std::vector<float> other = {-1.0f, -2.0f, -3.0f};
  ASSERT_TRUE(table.Restore(42, other, state).ok());
  EXPECT_EQ(Pull(table, {42}), other);
  EXPECT_EQ(table.rows(), 1u);

  EXPECT_EQ(table.Restore(1, std::vector<float>(2), state).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table.Restore(1, row, std::vector<float>(4)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(table.rows(), 1u);
}

TEST(EmbeddingTableTest, EraseDropsOnePartition) {
  const TableSpec spec = SgdSpec(2, 1.0f);
  EmbeddingTable table(spec, 4);
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 200; ++k) keys.push_back(k);
  ASSERT_TRUE(table.Push(keys, std::vector<float>(keys.size() * 2, 1.0f)).ok());

  std::map<uint32_t, std::set<uint64_t>> keys_by_partition;
  for (uint64_t key : keys) keys_by_partition[table.PartitionOf(key)].insert(key);
  ASSERT_EQ(keys_by_partition.size(), 4u);

  const uint32_t victim = 2;
  std::set<uint64_t> visited;
  ASSERT_TRUE(table
                  .ForEachRowInPartition(victim, [&](uint64_t key, std::span<const float> row,
                                                     std::span<const float> state) {
                    visited.insert(key);
                    EXPECT_EQ(row.size(), 2u);
                    EXPECT_TRUE(state.empty());
                  })
                  .ok());
  EXPECT_EQ(visited, keys_by_partition[victim]);

  EXPECT_EQ(*table.Erase(victim), keys_by_partition[victim].size());
  EXPECT_EQ(table.rows(), 200u - keys_by_partition[victim].size());
  EXPECT_EQ(*table.Erase(victim), 0u);
  size_t remaining = 0;
  ASSERT_TRUE(table
                  .ForEachRow([&](uint64_t key, std::span<const float>, std::span<const float>) {
                    EXPECT_NE(table.PartitionOf(key), victim);
                    ++remaining;
                  })
                  .ok());
  EXPECT_EQ(remaining, table.rows());

  // An erased row comes back fresh from the initializer; the others kept their update.
  const uint64_t erased_key = *keys_by_partition[victim].begin();
  const uint64_t kept_key = *keys_by_partition[0].begin();
  std::vector<float> initial(2);
  InitializeRow(spec, erased_key, initial);
  EXPECT_EQ(Pull(table, {erased_key}), initial);
  InitializeRow(spec, kept_key, initial);
  const std::vector<float> kept = Pull(table, {kept_key});
  EXPECT_FLOAT_EQ(kept[0], initial[0] - 1.0f);
}

}  // namespace
}  // namespace ember::embedding
