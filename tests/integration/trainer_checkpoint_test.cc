// Whole-cluster checkpoints taken by training runs: a periodic cut restored into 1 and 3 servers
// continues with the same losses and ends with the same rows and dense weights as the run that
// was never stopped; the same for two bsp trainers sharing dense weights on the servers; a cut
// asked for while training runs (`ember checkpoint`) is consistent too; a damaged trainer file or
// a run of another size is refused with an error naming it. Incremental checkpoints: a chain of
// increments restores into 1 and 3 servers exactly as well, and so does the base it compacts into;
// a chain with a missing, replaced, reordered or damaged link is refused, naming it.
//
// The real CPU backend, client, scheduler and servers run in this process; one trainer in asp
// (or bsp) is deterministic, so "the same" means bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>

#include "local/local_cluster.h"
#include "common/hash.h"
#include "ps/client/checkpoint.h"
#include "ps/client/checkpoint_compact.h"
#include "scheduler/checkpoint_cuts.h"
#include "tests/integration/small_two_tower.h"
#include "tests/test_util.h"
#include "trainer/cpu_backend.h"
#include "trainer/dense_table.h"
#include "trainer/synthetic_source.h"
#include "trainer/trainer.h"

namespace ember {
namespace {

constexpr uint32_t kDim = 8;
constexpr uint32_t kBatch = 64;
constexpr uint32_t kPartitions = 32;

trainer::ModelConfig Model() { return testing::SmallTwoTowerModel(); }

std::vector<TableSpec> Tables(bool dense_on_servers) {
  std::vector<TableSpec> tables;
  for (const char* name : {"user", "item"}) {
    TableSpec spec;
    spec.name = name;
    spec.dim = kDim;
    spec.seed = HashName(name);
    spec.optimizer.kind = OptimizerKind::kAdagrad;
    spec.optimizer.learning_rate = 0.05f;
    spec.initializer.stddev = 0.1f;
    tables.push_back(spec);
  }
  if (dense_on_servers) tables.push_back(trainer::DenseTableSpec(Model()));
  return tables;
}

trainer::SyntheticOptions Data(uint32_t rank) {
  return testing::SmallSyntheticData(2000, 11 + 1000 * rank);
}

// Every key a trainer of `rank` draws in `steps` steps.
std::vector<uint64_t> KeysOf(uint32_t rank, uint32_t steps, bool user) {
  trainer::SyntheticSource source(Data(rank));
  std::set<uint64_t> keys;
  trainer::Batch batch;
  for (uint32_t s = 0; s < steps; ++s) {
    EXPECT_TRUE(source.Next(kBatch, &batch).ok());
    const auto& slot = user ? batch.user_keys[0] : batch.item_keys[0];
    keys.insert(slot.begin(), slot.end());
  }
  return {keys.begin(), keys.end()};
}

struct RunOptions {
  uint32_t servers = 2;
  uint32_t trainers = 1;
  SyncMode mode = SyncMode::kAsp;
  uint64_t checkpoint_every = 0;
  uint32_t checkpoint_chain = 0;  // checkpoints per chain; 0: every cut is full
  std::string checkpoint_dir;
  std::string restore;  // a checkpoint to resume from
  uint32_t steps = 8;
};

struct RunResult {
  std::vector<std::vector<float>> losses;  // per trainer, per step run (index 0: first step run)
  std::vector<float> user_rows, item_rows; // of KeysOf(every rank), pulled at the end
  std::vector<trainer::DenseWeights> dense;  // per trainer, as its last step left them
  std::vector<Status> statuses;
};

// One cluster, `trainers` trainer threads; optional checkpoint thread: `during` runs while the
// trainers train (given the scheduler endpoint).
RunResult Train(const RunOptions& options,
                const std::function<void(const std::string&)>& during = {}) {
  const bool dense_on_servers = options.trainers > 1;
  local::LocalClusterOptions cluster_options;
  cluster_options.num_servers = options.servers;
  cluster_options.num_partitions = kPartitions;
  cluster_options.sync.mode = options.mode;
  cluster_options.sync.trainers = options.trainers;
  cluster_options.checkpoints.every = options.checkpoint_every;
  cluster_options.checkpoints.dir = options.checkpoint_dir;
  cluster_options.checkpoints.keep = 0;
  cluster_options.checkpoints.chain = options.checkpoint_chain;
  local::LocalCluster cluster(Tables(dense_on_servers), cluster_options);
  EXPECT_TRUE(cluster.status().ok()) << cluster.status().ToString();

  RunResult result;
  result.losses.resize(options.trainers);
  result.dense.resize(options.trainers);
  result.statuses.resize(options.trainers);
  std::vector<std::thread> threads;
  for (uint32_t rank = 0; rank < options.trainers; ++rank) {
    threads.emplace_back([&, rank] {
      ps::ClientOptions client_options;
      client_options.name = "trainer-" + std::to_string(rank);
      client_options.heartbeat_interval = Millis(500);
      auto client = cluster.Connect(client_options);
      if (!client.ok()) {
        result.statuses[rank] = client.status();
        return;
      }
      auto backend = trainer::MakeCpuBackend(Model(), trainer::InitDenseWeights(Model()));
      trainer::SyntheticSource data(Data(rank));
      trainer::TrainOptions train;
      train.batch_size = kBatch;
      train.log_every = 1;
      train.user_tables = {"user"};
      train.item_tables = {"item"};
      train.sync = cluster_options.sync;
      train.rank = rank;
      train.dense = dense_on_servers ? "servers" : "local";
      auto loop = trainer::Trainer::Create(client->get(), backend.get(), &data, Model(), train);
      if (!loop.ok()) {
        result.statuses[rank] = loop.status();
        return;
      }
      if (!options.restore.empty()) {
        Status restored = (*loop)->Restore(options.restore);
        if (!restored.ok()) {
          result.statuses[rank] = restored;
          return;
        }
      }
      auto summary = (*loop)->Run(options.steps);
      if (!summary.ok()) {
        result.statuses[rank] = summary.status();
        return;
      }
      for (const auto& window : summary->windows) {
        result.losses[rank].push_back(static_cast<float>(window.loss));
      }
      result.dense[rank] = backend->GetWeights();
    });
  }
  if (during) during(cluster.scheduler_endpoint());
  for (auto& thread : threads) thread.join();

  auto reader = cluster.Connect("reader");
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  for (bool user : {true, false}) {
    std::set<uint64_t> all;
    for (uint32_t rank = 0; rank < options.trainers; ++rank) {
      for (uint64_t key : KeysOf(rank, options.steps, user)) all.insert(key);
    }
    std::vector<uint64_t> keys(all.begin(), all.end());
    std::vector<float>& rows = user ? result.user_rows : result.item_rows;
    rows.resize(keys.size() * kDim);
    Status pulled = (*reader)->Pull(user ? "user" : "item", keys, rows).Wait();
    EXPECT_TRUE(pulled.ok()) << pulled.ToString();
  }
  return result;
}

void ExpectOk(const RunResult& run) {
  for (const Status& status : run.statuses) EXPECT_TRUE(status.ok()) << status.ToString();
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void ExpectSameDense(const trainer::DenseWeights& a, const trainer::DenseWeights& b) {
  for (trainer::Tower tower : {trainer::Tower::kUser, trainer::Tower::kItem}) {
    ASSERT_EQ(a.tower(tower).size(), b.tower(tower).size());
    for (size_t l = 0; l < a.tower(tower).size(); ++l) {
      EXPECT_TRUE(SameBits(a.tower(tower)[l].weight, b.tower(tower)[l].weight)) << "layer " << l;
      EXPECT_TRUE(SameBits(a.tower(tower)[l].bias, b.tower(tower)[l].bias)) << "layer " << l;
    }
  }
}

std::string StepDir(const std::string& parent, uint64_t step) {
  return scheduler::PeriodicCutDir(parent, step);
}

TEST(TrainerCheckpointTest, RestoreIntoOneAndThreeServersContinuesExactly) {
  testing::TempDir dir;
  RunOptions original;
  original.checkpoint_every = 5;
  original.checkpoint_dir = dir.path();
  const RunResult full = Train(original);
  ExpectOk(full);
  ASSERT_EQ(full.losses[0].size(), 8u);

  const std::string cut = StepDir(dir.path(), 5);
  auto manifest = ReadAndVerifyCheckpoint(cut);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->step, 5u);
  EXPECT_EQ(manifest->trainers, 1u);
  EXPECT_EQ(manifest->servers, 2u);
  EXPECT_FALSE(std::filesystem::exists(StepDir(dir.path(), 10)));

  for (uint32_t servers : {1u, 3u}) {
    SCOPED_TRACE(std::to_string(servers) + " servers");
    RunOptions resumed;
    resumed.servers = servers;
    resumed.restore = cut;
    const RunResult rest = Train(resumed);
    ExpectOk(rest);
    ASSERT_EQ(rest.losses[0].size(), 3u);  // steps 6, 7, 8
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(rest.losses[0][i], full.losses[0][5 + i]) << i;
    EXPECT_TRUE(SameBits(rest.user_rows, full.user_rows));
    EXPECT_TRUE(SameBits(rest.item_rows, full.item_rows));
    ExpectSameDense(rest.dense[0], full.dense[0]);
  }
}

TEST(TrainerCheckpointTest, BspTrainersWithDenseWeightsOnTheServersResumeExactly) {
  testing::TempDir dir;
  RunOptions original;
  original.trainers = 2;
  original.mode = SyncMode::kBsp;
  original.steps = 6;
  original.checkpoint_every = 4;
  original.checkpoint_dir = dir.path();
  const RunResult full = Train(original);
  ExpectOk(full);

  RunOptions resumed = original;
  resumed.servers = 3;
  resumed.checkpoint_every = 0;
  resumed.restore = StepDir(dir.path(), 4);
  const RunResult rest = Train(resumed);
  ExpectOk(rest);
  for (uint32_t rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(rest.losses[rank].size(), 2u);
    EXPECT_EQ(rest.losses[rank][0], full.losses[rank][4]);
    EXPECT_EQ(rest.losses[rank][1], full.losses[rank][5]);
  }
  EXPECT_TRUE(SameBits(rest.user_rows, full.user_rows));
  EXPECT_TRUE(SameBits(rest.item_rows, full.item_rows));

  // A run of another size cannot take the trainers' shares over.
  RunOptions wrong = resumed;
  wrong.trainers = 1;
  wrong.mode = SyncMode::kAsp;
  const RunResult refused = Train(wrong);
  ASSERT_FALSE(refused.statuses[0].ok());
  EXPECT_NE(refused.statuses[0].ToString().find("run of 2 trainers"), std::string::npos)
      << refused.statuses[0].ToString();
}

TEST(TrainerCheckpointTest, ACheckpointAskedForWhileTrainingIsConsistent) {
  testing::TempDir dir;
  const std::string cut = dir.path() + "/now";
  RunOptions original;
  original.steps = 60;
  Result<wire::CutInfo> taken = Internal("not asked");
  const RunResult full = Train(original, [&](const std::string& scheduler) {
    // Ask as soon as the trainer has completed a step; bounded retries.
    for (int attempt = 0; attempt < 200; ++attempt) {
      taken = ps::RequestCheckpoint(scheduler, {}, {cut, "", false}, Millis(30'000));
      if (taken.ok() || taken.status().code() != StatusCode::kFailedPrecondition) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  ExpectOk(full);
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  ASSERT_GT(taken->clock, 1u);
  ASSERT_LT(taken->clock, 60u);
  auto manifest = ReadAndVerifyCheckpoint(cut);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  EXPECT_EQ(manifest->step, taken->clock);

  RunOptions resumed = original;
  resumed.restore = cut;
  const RunResult rest = Train(resumed);
  ExpectOk(rest);
  ASSERT_EQ(rest.losses[0].size(), 60 - taken->clock);
  EXPECT_EQ(rest.losses[0].back(), full.losses[0].back());
  EXPECT_TRUE(SameBits(rest.user_rows, full.user_rows));
  EXPECT_TRUE(SameBits(rest.item_rows, full.item_rows));
  ExpectSameDense(rest.dense[0], full.dense[0]);
}

TEST(TrainerCheckpointTest, ADamagedTrainerFileIsRefusedNamingIt) {
  testing::TempDir dir;
  RunOptions original;
  original.steps = 3;
  original.checkpoint_every = 2;
  original.checkpoint_dir = dir.path();
  ExpectOk(Train(original));
  const std::string cut = StepDir(dir.path(), 2);
  const std::string file = TrainerFilePath(cut, 0);
  {
    std::fstream bytes(file, std::ios::in | std::ios::out | std::ios::binary);
    bytes.seekp(40);
    bytes.put('\x5a');
  }
  RunOptions resumed;
  resumed.restore = cut;
  const RunResult refused = Train(resumed);
  ASSERT_FALSE(refused.statuses[0].ok());
  EXPECT_NE(refused.statuses[0].ToString().find("trainer-0.bin"), std::string::npos)
      << refused.statuses[0].ToString();
}

// Bytes of the partition files (whole and delta) of the checkpoint in `dir`.
uint64_t TableBytes(const std::string& dir) {
  auto manifest = ReadManifest(dir);
  EXPECT_TRUE(manifest.ok()) << manifest.status().ToString();
  uint64_t bytes = 0;
  if (manifest.ok()) {
    for (const ManifestFile& file : manifest->files) {
      if (file.path.rfind("tables/", 0) == 0) bytes += file.bytes;
    }
  }
  return bytes;
}

size_t DeltaFiles(const std::string& dir) {
  auto manifest = ReadManifest(dir);
  size_t deltas = 0;
  if (manifest.ok()) {
    for (const ManifestFile& file : manifest->files) deltas += IsDeltaFilePath(file.path);
  }
  return deltas;
}

class IncrementalCheckpointTest : public ::testing::Test {
 protected:
  // One run of 12 steps cutting every 2 into chains of at most 4: a base at step 2, increments
  // at 4, 6 and 8, a new base at 10 and its increment at 12.
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir;
    RunOptions original;
    original.steps = 12;
    original.checkpoint_every = 2;
    original.checkpoint_chain = 4;
    original.checkpoint_dir = dir_->path();
    full_ = new RunResult(Train(original));
  }
  static void TearDownTestSuite() {
    delete full_;
    delete dir_;
  }

  // Resumes from `cut` in a cluster of `servers` and expects the uninterrupted run's figures.
  static void ExpectResumesExactly(const std::string& cut, uint64_t step, uint32_t servers) {
    SCOPED_TRACE(cut + " into " + std::to_string(servers) + " servers");
    RunOptions resumed;
    resumed.steps = 12;
    resumed.servers = servers;
    resumed.restore = cut;
    const RunResult rest = Train(resumed);
    ExpectOk(rest);
    ASSERT_EQ(rest.losses[0].size(), 12 - step);
    for (size_t i = 0; i < rest.losses[0].size(); ++i) {
      EXPECT_EQ(rest.losses[0][i], full_->losses[0][step + i]) << i;
    }
    EXPECT_TRUE(SameBits(rest.user_rows, full_->user_rows));
    EXPECT_TRUE(SameBits(rest.item_rows, full_->item_rows));
    ExpectSameDense(rest.dense[0], full_->dense[0]);
  }

  // A copy of the chain that ends at step 8 (steps 2 to 8) in a folder of its own.
  static std::string CopyOfChain(const testing::TempDir& into) {
    for (uint64_t step : {2, 4, 6, 8}) {
      std::filesystem::copy(StepDir(dir_->path(), step), StepDir(into.path(), step),
                            std::filesystem::copy_options::recursive);
    }
    return StepDir(into.path(), 8);
  }

  static testing::TempDir* dir_;
  static RunResult* full_;
};

testing::TempDir* IncrementalCheckpointTest::dir_ = nullptr;
RunResult* IncrementalCheckpointTest::full_ = nullptr;

TEST_F(IncrementalCheckpointTest, ChainsHoldOnlyTheChangedRowsAndRestoreIntoAnyServerCount) {
  ExpectOk(*full_);
  ASSERT_EQ(full_->losses[0].size(), 12u);
  const std::vector<uint32_t> places = {0, 1, 2, 3, 0, 1};  // of steps 2, 4, ..., 12
  for (uint64_t step = 2; step <= 12; step += 2) {
    SCOPED_TRACE("step " + std::to_string(step));
    auto chain = ReadCheckpointChain(StepDir(dir_->path(), step), VerifyFiles::kYes);
    ASSERT_TRUE(chain.ok()) << chain.status().ToString();
    const uint32_t place = places[step / 2 - 1];
    EXPECT_EQ(chain->back().manifest.chain.sequence, place);
    EXPECT_EQ(chain->size(), place + 1);
    if (place == 0) {
      EXPECT_EQ(DeltaFiles(StepDir(dir_->path(), step)), 0u);
    } else {
      EXPECT_GT(DeltaFiles(StepDir(dir_->path(), step)), 0u);
    }
  }
  // An increment holds the rows of two steps, fewer than a whole checkpoint of the table as it
  // stood then (early on, most rows a step touches are new, so the comparison starts later).
  EXPECT_LT(TableBytes(StepDir(dir_->path(), 8)), TableBytes(StepDir(dir_->path(), 10)));
  EXPECT_LT(TableBytes(StepDir(dir_->path(), 12)), TableBytes(StepDir(dir_->path(), 10)));
  ExpectResumesExactly(StepDir(dir_->path(), 8), 8, 1);
  ExpectResumesExactly(StepDir(dir_->path(), 8), 8, 3);
  ExpectResumesExactly(StepDir(dir_->path(), 12), 12, 2);
}

TEST_F(IncrementalCheckpointTest, ARunResumedFromAnEarlierStepChainsItsCutsAgainExactly) {
  // The whole folder, steps 2 to 12; resumed from step 6 with the same schedule, the run cuts
  // steps 8 to 12 again over what its first run left there.
  testing::TempDir copy;
  for (uint64_t step = 2; step <= 12; step += 2) {
    std::filesystem::copy(StepDir(dir_->path(), step), StepDir(copy.path(), step),
                          std::filesystem::copy_options::recursive);
  }
  RunOptions resumed;
  resumed.steps = 12;
  resumed.checkpoint_every = 2;
  resumed.checkpoint_chain = 4;
  resumed.checkpoint_dir = copy.path();
  resumed.restore = StepDir(copy.path(), 6);
  ExpectOk(Train(resumed));
  // Step 8 extends the restored step 6 with deltas (the servers tracked their changes from its
  // cut), not the step 8 or 12 the first run left; 10 is a new base and 12 extends it.
  auto eight = ReadCheckpointChain(StepDir(copy.path(), 8), VerifyFiles::kYes);
  ASSERT_TRUE(eight.ok()) << eight.status().ToString();
  EXPECT_EQ(eight->back().manifest.chain.sequence, 3u);
  EXPECT_GT(DeltaFiles(StepDir(copy.path(), 8)), 0u);
  auto twelve = ReadCheckpointChain(StepDir(copy.path(), 12), VerifyFiles::kYes);
  ASSERT_TRUE(twelve.ok()) << twelve.status().ToString();
  EXPECT_EQ(twelve->front().dir, StepDir(copy.path(), 10));
  ExpectResumesExactly(StepDir(copy.path(), 8), 8, 3);
  ExpectResumesExactly(StepDir(copy.path(), 12), 12, 1);
}

TEST_F(IncrementalCheckpointTest, ACompactedChainRestoresExactly) {
  testing::TempDir copy;
  const std::string tip = CopyOfChain(copy);
  auto folded = ps::CompactCheckpoint(tip, ps::DefaultCompactionDir(tip));
  ASSERT_TRUE(folded.ok()) << folded.status().ToString();
  EXPECT_EQ(folded->folded, 4u);
  EXPECT_EQ(folded->step, 8u);
  auto base = ReadAndVerifyCheckpoint(folded->dir);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  EXPECT_EQ(base->chain.sequence, 0u);
  EXPECT_EQ(DeltaFiles(folded->dir), 0u);
  // It sorts after the tip, so it is the newest checkpoint of the folder.
  auto newest = FindCheckpoint(copy.path());
  ASSERT_TRUE(newest.ok());
  EXPECT_EQ(*newest, folded->dir);
  // Folding again into the same place is refused.
  EXPECT_EQ(ps::CompactCheckpoint(tip, folded->dir).status().code(),
            StatusCode::kFailedPrecondition);
  ExpectResumesExactly(folded->dir, 8, 3);
}

TEST_F(IncrementalCheckpointTest, BrokenChainsAreRefusedNamingTheLink) {
  auto refused = [](const std::string& tip, const std::string& expected) {
    auto chain = ReadCheckpointChain(tip, VerifyFiles::kYes);
    EXPECT_FALSE(chain.ok()) << expected;
    if (!chain.ok()) {
      EXPECT_NE(chain.status().ToString().find(expected), std::string::npos)
          << chain.status().ToString();
    }
  };
  {
    SCOPED_TRACE("missing");
    testing::TempDir copy;
    const std::string tip = CopyOfChain(copy);
    std::filesystem::remove_all(StepDir(copy.path(), 4));
    refused(tip, StepDir(copy.path(), 4));
    // A restore of it changes nothing: it fails before any server is asked.
    RunOptions resumed;
    resumed.restore = tip;
    const RunResult failed = Train(resumed);
    ASSERT_FALSE(failed.statuses[0].ok());
    EXPECT_NE(failed.statuses[0].ToString().find(StepDir(copy.path(), 4)), std::string::npos)
        << failed.statuses[0].ToString();
  }
  {
    SCOPED_TRACE("replaced by a duplicate of another link");
    testing::TempDir copy;
    const std::string tip = CopyOfChain(copy);
    std::filesystem::remove_all(StepDir(copy.path(), 6));
    std::filesystem::copy(StepDir(copy.path(), 4), StepDir(copy.path(), 6),
                          std::filesystem::copy_options::recursive);
    refused(tip, "replaced, or a duplicate");
  }
  {
    SCOPED_TRACE("reordered");
    testing::TempDir copy;
    const std::string tip = CopyOfChain(copy);
    const std::string swap = copy.path() + "/swap";
    std::filesystem::rename(StepDir(copy.path(), 4), swap);
    std::filesystem::rename(StepDir(copy.path(), 6), StepDir(copy.path(), 4));
    std::filesystem::rename(swap, StepDir(copy.path(), 6));
    refused(tip, StepDir(copy.path(), 6));
  }
  {
    SCOPED_TRACE("damaged delta");
    testing::TempDir copy;
    const std::string tip = CopyOfChain(copy);
    auto manifest = ReadManifest(StepDir(copy.path(), 6));
    ASSERT_TRUE(manifest.ok());
    std::string delta;
    for (const ManifestFile& file : manifest->files) {
      if (IsDeltaFilePath(file.path)) delta = StepDir(copy.path(), 6) + "/" + file.path;
    }
    ASSERT_FALSE(delta.empty());
    {
      std::fstream bytes(delta, std::ios::in | std::ios::out | std::ios::binary);
      bytes.seekp(30);
      bytes.put('\x5a');
    }
    refused(tip, delta);
  }
}

}  // namespace
}  // namespace ember
