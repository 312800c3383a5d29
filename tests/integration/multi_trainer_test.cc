// Many trainers against one in-process cluster: bsp equals one trainer on the combined batch,
// ssp keeps the clock spread within its bound, asp never makes a fast trainer wait; and
// look-ahead (hints to tiered servers) leaves every row as it would be without it.
//
// The model's in-batch softmax is not a sum over samples (each sample's negatives are the rest of
// its batch), so two batches of B cannot equal one of 2B with it. These tests therefore run the
// real Trainer, client, scheduler and servers with a backend whose loss is a mean over samples:
// 0.5 * |W_u x_u + b_u - W_i x_i - b_i|^2 per (user, item) pair, with its exact gradients.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "local/local_cluster.h"
#include "tests/test_util.h"
#include "trainer/dense_table.h"
#include "trainer/trainer.h"

namespace ember {
namespace {

using trainer::Backend;
using trainer::DenseWeights;

constexpr uint32_t kDim = 4;
constexpr uint32_t kOut = 3;

trainer::ModelConfig TinyModel() {
  trainer::ModelConfig model;
  model.embedding_dim = kDim;
  model.user_slots = 1;
  model.item_slots = 1;
  model.hidden = {};
  model.output_dim = kOut;
  model.learning_rate = 0.01f;
  return model;
}

// A linear "two tower" with a per-sample squared loss; optionally sleeps each step.
class PairLossBackend final : public Backend {
 public:
  PairLossBackend(const trainer::ModelConfig& model, std::chrono::milliseconds delay)
      : weights_(trainer::InitDenseWeights(model)), grads_(weights_), delay_(delay) {}

  std::string_view name() const override { return "pair-loss"; }

  Result<trainer::StepStats> TrainStep(uint32_t batch, const trainer::TowerInput& user,
                                       const trainer::TowerInput& item) override {
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    auto& wu = weights_.user[0];
    auto& wi = weights_.item[0];
    auto& gu = grads_.user[0];
    auto& gi = grads_.item[0];
    for (auto* g : {&gu, &gi}) {
      std::fill(g->weight.begin(), g->weight.end(), 0.0f);
      std::fill(g->bias.begin(), g->bias.end(), 0.0f);
    }
    const auto& us = user.slots[0];
    const auto& is = item.slots[0];
    std::fill(us.unique_grads.begin(), us.unique_grads.end(), 0.0f);
    std::fill(is.unique_grads.begin(), is.unique_grads.end(), 0.0f);
    const float scale = 1.0f / static_cast<float>(batch);
    double loss = 0;
    for (uint32_t b = 0; b < batch; ++b) {
      const float* xu = us.unique_rows.data() + size_t{us.inverse[b]} * kDim;
      const float* xi = is.unique_rows.data() + size_t{is.inverse[b]} * kDim;
      float r[kOut];
      for (uint32_t o = 0; o < kOut; ++o) {
        float yu = wu.bias[o], yi = wi.bias[o];
        for (uint32_t d = 0; d < kDim; ++d) {
          yu += wu.weight[o * kDim + d] * xu[d];
          yi += wi.weight[o * kDim + d] * xi[d];
        }
        r[o] = yu - yi;
        loss += 0.5 * r[o] * r[o];
      }
      float* dxu = us.unique_grads.data() + size_t{us.inverse[b]} * kDim;
      float* dxi = is.unique_grads.data() + size_t{is.inverse[b]} * kDim;
      for (uint32_t o = 0; o < kOut; ++o) {
        const float g = r[o] * scale;
        gu.bias[o] += g;
        gi.bias[o] -= g;
        for (uint32_t d = 0; d < kDim; ++d) {
          gu.weight[o * kDim + d] += g * xu[d];
          gi.weight[o * kDim + d] -= g * xi[d];
          dxu[d] += g * wu.weight[o * kDim + d];
          dxi[d] -= g * wi.weight[o * kDim + d];
        }
      }
    }
    return trainer::StepStats{static_cast<float>(loss * scale), 0.0f};
  }

  Status Encode(trainer::Tower, uint32_t, const trainer::TowerInput&, std::span<float>) override {
    return Internal("not used");
  }
  DenseWeights GetWeights() override { return weights_; }
  Result<DenseWeights> DenseGradients() override { return grads_; }
  Status SetWeights(const DenseWeights& weights) override {
    weights_ = weights;
    return Status::Ok();
  }

 private:
  DenseWeights weights_, grads_;
  std::chrono::milliseconds delay_;
};

// Hands out fixed (user, item) pairs: sample i of block j is pairs[j * stride + offset + i].
class ListSource final : public trainer::DataSource {
 public:
  ListSource(std::vector<std::pair<uint64_t, uint64_t>> pairs, uint32_t offset, uint32_t stride)
      : pairs_(std::move(pairs)), offset_(offset), stride_(stride) {}
  Status Next(uint32_t batch_size, trainer::Batch* out) override {
    out->size = batch_size;
    out->user_keys.assign(1, std::vector<uint64_t>(batch_size));
    out->item_keys.assign(1, std::vector<uint64_t>(batch_size));
    out->item_log_frequency.clear();
    for (uint32_t b = 0; b < batch_size; ++b) {
      const auto& pair = pairs_[(block_ * stride_ + offset_ + b) % pairs_.size()];
      out->user_keys[0][b] = pair.first;
      out->item_keys[0][b] = pair.second;
    }
    ++block_;
    return Status::Ok();
  }
  uint32_t user_slots() const override { return 1; }
  uint32_t item_slots() const override { return 1; }
  std::string Describe() const override { return "list"; }

 private:
  std::vector<std::pair<uint64_t, uint64_t>> pairs_;
  uint32_t offset_, stride_;
  uint64_t block_ = 0;
};

std::vector<TableSpec> Tables(OptimizerKind kind, const trainer::ModelConfig& model) {
  std::vector<TableSpec> tables;
  for (const char* name : {"user", "item"}) {
    TableSpec spec;
    spec.name = name;
    spec.dim = kDim;
    spec.seed = 11;
    spec.optimizer.kind = kind;
    spec.optimizer.learning_rate = 0.1f;
    spec.optimizer.initial_accumulator = 0.1f;
    tables.push_back(spec);
  }
  tables.push_back(trainer::DenseTableSpec(model));
  return tables;
}

trainer::TrainOptions Options(uint32_t batch, SyncOptions sync, uint32_t lookahead) {
  trainer::TrainOptions options;
  options.lookahead = lookahead;
  options.batch_size = batch;
  options.log_every = 0;
  options.user_tables = {"user"};
  options.item_tables = {"item"};
  options.sampling_correction = false;
  options.dense = "servers";
  options.sync = sync;
  return options;
}

struct TrainerRun {
  std::unique_ptr<ps::Client> client;
  std::unique_ptr<PairLossBackend> backend;
  std::unique_ptr<ListSource> data;
  std::unique_ptr<trainer::Trainer> loop;
  Status status;
};

// Connects `count` trainers (trainer k reads offset k * batch of each block) and runs them in
// threads for `steps` each; `delay_of(k)` slows trainer k; `hook(k, loop)` installs observers.
std::vector<TrainerRun> RunTrainers(
    local::LocalCluster& cluster, uint32_t count, uint32_t batch, uint32_t steps, SyncOptions sync,
    const std::vector<std::pair<uint64_t, uint64_t>>& pairs,
    const std::function<std::chrono::milliseconds(uint32_t)>& delay_of,
    const std::function<void(uint32_t, trainer::Trainer&)>& hook = {},
    const std::function<uint32_t(uint32_t)>& steps_of = {}, uint32_t lookahead = 0) {
  const trainer::ModelConfig model = TinyModel();
  std::vector<TrainerRun> runs(count);
  for (uint32_t k = 0; k < count; ++k) {
    auto client = cluster.Connect("trainer-" + std::to_string(k));
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    if (!client.ok()) return {};
    runs[k].client = std::move(*client);
    runs[k].backend = std::make_unique<PairLossBackend>(model, delay_of(k));
    runs[k].data = std::make_unique<ListSource>(pairs, k * batch, count * batch);
    auto loop = trainer::Trainer::Create(runs[k].client.get(), runs[k].backend.get(),
                                         runs[k].data.get(), model, Options(batch, sync, lookahead));
    EXPECT_TRUE(loop.ok()) << loop.status().ToString();
    if (!loop.ok()) return {};
    runs[k].loop = std::move(*loop);
    if (hook) hook(k, *runs[k].loop);
  }
  std::vector<std::thread> threads;
  for (uint32_t k = 0; k < count; ++k) {
    threads.emplace_back([&, k] {
      auto summary = runs[k].loop->Run(steps_of ? steps_of(k) : steps);
      runs[k].status = summary.status();
    });
  }
  for (auto& thread : threads) thread.join();
  return runs;
}

// By default few keys: trainers share rows.
std::vector<std::pair<uint64_t, uint64_t>> RandomPairs(size_t n, uint64_t users = 13,
                                                       uint64_t items = 17) {
  std::mt19937_64 rng(5);
  std::vector<std::pair<uint64_t, uint64_t>> pairs(n);
  for (auto& pair : pairs) pair = {rng() % users, rng() % items};
  return pairs;
}

// Every row the pairs touch (keys below `keys_per_table`), and the dense table, as read from the
// cluster.
std::vector<float> Snapshot(local::LocalCluster& cluster, uint64_t keys_per_table = 17) {
  auto client = cluster.Connect("reader");
  EXPECT_TRUE(client.ok());
  std::vector<float> all;
  std::vector<uint64_t> keys(keys_per_table);
  for (uint64_t k = 0; k < keys.size(); ++k) keys[k] = k;
  for (const char* table : {"user", "item"}) {
    std::vector<float> rows(keys.size() * kDim);
    EXPECT_TRUE((*client)->Pull(table, keys, rows).Wait().ok());
    all.insert(all.end(), rows.begin(), rows.end());
  }
  trainer::DenseTable dense(TinyModel());
  std::vector<float> rows(dense.buffer_floats());
  std::vector<ps::Ticket> tickets;
  dense.StartPull(**client, rows, &tickets);
  EXPECT_TRUE(tickets[0].Wait().ok());
  all.insert(all.end(), rows.begin(), rows.end());
  return all;
}

local::LocalClusterOptions ClusterOptions(SyncOptions sync) {
  local::LocalClusterOptions options;
  options.num_servers = 2;
  options.num_partitions = 16;
  options.sync = sync;
  return options;
}

class BspEquivalenceTest : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(BspEquivalenceTest, TwoTrainersOfBatchBAveragedEqualOneTrainerOfBatch2B) {
  constexpr uint32_t kBatch = 8, kSteps = 6;
  const auto pairs = RandomPairs(2 * kBatch * kSteps);
  const trainer::ModelConfig model = TinyModel();
  auto no_delay = [](uint32_t) { return std::chrono::milliseconds(0); };

  SyncOptions single;  // one trainer, pushes applied on arrival
  local::LocalCluster reference(Tables(GetParam(), model), ClusterOptions(single));
  ASSERT_TRUE(reference.status().ok()) << reference.status().ToString();
  auto one = RunTrainers(reference, 1, 2 * kBatch, kSteps, single, pairs, no_delay);
  ASSERT_EQ(one.size(), 1u);
  ASSERT_TRUE(one[0].status.ok()) << one[0].status.ToString();

  SyncOptions bsp;
  bsp.mode = SyncMode::kBsp;
  bsp.trainers = 2;
  bsp.clock_timeout = std::chrono::seconds(20);
  local::LocalCluster cluster(Tables(GetParam(), model), ClusterOptions(bsp));
  ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
  // Trainer 1 is slower, so a read before the other's pushes were applied would show.
  auto two = RunTrainers(cluster, 2, kBatch, kSteps, bsp, pairs, [](uint32_t k) {
    return std::chrono::milliseconds(k == 1 ? 15 : 0);
  });
  ASSERT_EQ(two.size(), 2u);
  for (const auto& run : two) ASSERT_TRUE(run.status.ok()) << run.status.ToString();

  const std::vector<float> expected = Snapshot(reference);
  const std::vector<float> actual = Snapshot(cluster);
  ASSERT_EQ(expected.size(), actual.size());
  size_t changed = 0;
  trainer::DenseTable dense(model);
  const size_t row_values = expected.size() - dense.buffer_floats();
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], 1e-5f + 1e-4f * std::fabs(expected[i]))
        << (i < row_values ? "embedding value " : "dense value ") << i;
    changed += expected[i] != 0.0f && i >= row_values;
  }
  EXPECT_GT(changed, 0u) << "the dense weights never moved";
}

INSTANTIATE_TEST_SUITE_P(Optimizers, BspEquivalenceTest,
                         ::testing::Values(OptimizerKind::kSgd, OptimizerKind::kAdagrad),
                         [](const auto& info) {
                           return info.param == OptimizerKind::kSgd ? "Sgd" : "Adagrad";
                         });

// Runs 3 trainers, trainer 2 slowed, and returns the largest clock lead any trainer had over
// the slowest one when it started a pull.
uint64_t LargestSpreadAtPulls(uint32_t staleness) {
  constexpr uint32_t kTrainers = 3, kSteps = 12;
  SyncOptions ssp;
  ssp.mode = SyncMode::kSsp;
  ssp.staleness = staleness;
  ssp.trainers = kTrainers;
  ssp.clock_timeout = std::chrono::seconds(20);
  local::LocalCluster cluster(Tables(OptimizerKind::kSgd, TinyModel()), ClusterOptions(ssp));
  EXPECT_TRUE(cluster.status().ok());
  std::atomic<uint64_t> done[kTrainers] = {};
  std::atomic<uint64_t> largest{0};
  std::mutex mutex;
  auto hook = [&](uint32_t k, trainer::Trainer& loop) {
    trainer::ClockObserver observer;
    observer.step_done = [&, k](uint64_t clock) { done[k].store(clock); };
    observer.before_pull = [&](uint64_t clock) {
      std::lock_guard lock(mutex);
      uint64_t slowest = UINT64_MAX;
      for (auto& d : done) slowest = std::min<uint64_t>(slowest, d.load());
      if (clock > slowest) largest.store(std::max<uint64_t>(largest.load(), clock - slowest));
    };
    loop.set_clock_observer(observer);
  };
  auto runs = RunTrainers(cluster, kTrainers, 4, kSteps, ssp, RandomPairs(64), [](uint32_t k) {
    return std::chrono::milliseconds(k == 2 ? 30 : 0);
  }, hook);
  EXPECT_EQ(runs.size(), kTrainers);
  for (const auto& run : runs) EXPECT_TRUE(run.status.ok()) << run.status.ToString();
  return largest.load();
}

TEST(SspTest, ClockSpreadAtEveryPullStaysWithinTheStaleness) {
  EXPECT_EQ(LargestSpreadAtPulls(2), 2u);  // reached, never exceeded
}

TEST(SspTest, StalenessZeroReadsLikeBsp) { EXPECT_EQ(LargestSpreadAtPulls(0), 0u); }

TEST(AspTest, ASlowTrainerDoesNotSlowTheOthers) {
  SyncOptions asp;
  asp.trainers = 2;
  local::LocalCluster cluster(Tables(OptimizerKind::kSgd, TinyModel()), ClusterOptions(asp));
  ASSERT_TRUE(cluster.status().ok());
  constexpr uint32_t kFastSteps = 60, kSlowSteps = 15;
  std::atomic<uint64_t> slow_steps{0}, slow_steps_when_fast_done{0};
  auto hook = [&](uint32_t k, trainer::Trainer& loop) {
    trainer::ClockObserver observer;
    observer.step_done = [&, k](uint64_t clock) {
      if (k == 1) slow_steps.store(clock);
      if (k == 0 && clock == kFastSteps) slow_steps_when_fast_done.store(slow_steps.load());
    };
    loop.set_clock_observer(observer);
  };
  auto runs = RunTrainers(
      cluster, 2, 4, kFastSteps, asp, RandomPairs(64),
      [](uint32_t k) { return std::chrono::milliseconds(k == 1 ? 60 : 0); }, hook,
      [](uint32_t k) { return k == 1 ? kSlowSteps : kFastSteps; });
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& run : runs) ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  // 60 fast steps take far less than the slow trainer's 15 x 60 ms.
  EXPECT_LT(slow_steps_when_fast_done.load(), kSlowSteps / 2)
      << "the fast trainer finished its 60 steps only after the slow one's "
      << slow_steps_when_fast_done.load();
}

// Look-ahead changes where rows are when a batch needs them, nothing else: on tiered servers whose
// memory holds a fraction of the rows, runs with and without hints end with the same rows, bit for
// bit, as a cluster holding every row in memory; in asp with one trainer and in bsp with two.
class LookaheadExactnessTest : public ::testing::TestWithParam<SyncMode> {};

TEST_P(LookaheadExactnessTest, TieredRunsWithAndWithoutLookaheadEndWithTheSameRows) {
  constexpr uint32_t kBatch = 32, kSteps = 16;
  constexpr uint64_t kUsers = 200, kItems = 300;
  const auto pairs = RandomPairs(2 * kBatch * kSteps, kUsers, kItems);
  SyncOptions sync;
  uint32_t trainers = 1;
  if (GetParam() == SyncMode::kBsp) {
    sync.mode = SyncMode::kBsp;
    sync.trainers = trainers = 2;
    sync.clock_timeout = std::chrono::seconds(20);
  }
  auto no_delay = [](uint32_t) { return std::chrono::milliseconds(0); };
  const char* const kVariants[] = {"in memory", "tiered", "tiered, look-ahead 4"};
  std::vector<std::vector<float>> snapshots;
  uint64_t prefetched = 0, pinned_after = 0;
  for (int variant = 0; variant < 3; ++variant) {
    testing::TempDir dir;
    local::LocalClusterOptions options = ClusterOptions(sync);
    if (variant > 0) {
      options.data_dir = dir.path();
      // Room for some 170 rows of 36 bytes per server, fewer than a run touches (the dense row,
      // 12 KiB, goes to disk after each use).
      options.memory_budget_bytes = 6 * 1024;
    }
    local::LocalCluster cluster(Tables(OptimizerKind::kAdagrad, TinyModel()), options);
    ASSERT_TRUE(cluster.status().ok()) << cluster.status().ToString();
    auto runs = RunTrainers(cluster, trainers, kBatch, kSteps, sync, pairs, no_delay, {}, {},
                            variant == 2 ? 4 : 0);
    ASSERT_EQ(runs.size(), trainers);
    for (const auto& run : runs) ASSERT_TRUE(run.status.ok()) << run.status.ToString();
    if (variant == 2) {
      auto client = cluster.Connect("stats");
      ASSERT_TRUE(client.ok());
      auto stats = (*client)->Stats();
      ASSERT_TRUE(stats.ok()) << stats.status().ToString();
      for (const ServerStats& server : *stats) {
        for (const TableStats& table : server.tables) {
          prefetched += table.prefetched_rows + table.created_ahead;
          pinned_after += table.pinned_rows;
        }
      }
    }
    snapshots.push_back(Snapshot(cluster, std::max(kUsers, kItems)));
  }
  EXPECT_GT(prefetched, 0u) << "no hinted row was read or created ahead: the test did not test "
                               "look-ahead";
  EXPECT_EQ(pinned_after, 0u) << "every batch's push releases its hint";
  for (int variant = 1; variant < 3; ++variant) {
    ASSERT_EQ(snapshots[variant].size(), snapshots[0].size());
    size_t differing = 0;
    for (size_t i = 0; i < snapshots[0].size(); ++i) {
      differing += std::memcmp(&snapshots[variant][i], &snapshots[0][i], sizeof(float)) != 0;
    }
    EXPECT_EQ(differing, 0u) << kVariants[variant] << " differs from " << kVariants[0];
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, LookaheadExactnessTest,
                         ::testing::Values(SyncMode::kAsp, SyncMode::kBsp),
                         [](const auto& info) {
                           return info.param == SyncMode::kAsp ? "AspOneTrainer" : "BspTwoTrainers";
                         });

}  // namespace
}  // namespace ember
