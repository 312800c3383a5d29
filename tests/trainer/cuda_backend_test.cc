// Tests for the CUDA backend: it must compute what the CPU backend computes. Skipped when the
// build has no CUDA support or the machine has no CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "random_tower_batch.h"
#include "trainer/backend.h"
#include "trainer/cpu_backend.h"

namespace ember::trainer {
namespace {

using testing::RandomBatch;
using testing::RandomTower;

// |a - b| / |b| over whole arrays: robust to individual near-zero entries.
double RelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double difference = 0, reference = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    difference += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    reference += double{b[i]} * b[i];
  }
  return std::sqrt(difference) / std::max(std::sqrt(reference), 1e-20);
}

std::vector<std::vector<float>> AllGrads(RandomBatch& batch) {
  std::vector<std::vector<float>> grads;
  for (RandomTower* tower : {&batch.user, &batch.item}) {
    for (const auto& slot : tower->slots) grads.push_back(slot.grads);
  }
  return grads;
}

std::unique_ptr<Backend> MakeCudaFrom(const ModelConfig& config, const DenseWeights& weights) {
  auto backend = MakeBackend("cuda", config);
  EXPECT_TRUE(backend.ok()) << backend.status().ToString();
  if (!backend.ok()) return nullptr;
  EXPECT_EQ((*backend)->name(), "cuda");
  EXPECT_TRUE((*backend)->SetWeights(weights).ok());
  return std::move(backend).value();
}

class CudaBackendTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    if (!CudaBackendAvailable()) GTEST_SKIP() << "no CUDA support in this build or no device";
  }
};

ModelConfig SmallConfig() {
  ModelConfig config;
  config.embedding_dim = 8;
  config.user_slots = 2;
  config.item_slots = 3;
  config.hidden = {32, 16};
  config.output_dim = 12;
  config.seed = 5;
  return config;
}

// Five steps from the same weights on both backends: losses, unique-row gradients, the weights
// afterwards and Encode outputs agree to float accuracy.
void ExpectCudaMatchesCpu(const ModelConfig& config, uint32_t batch_size) {
  const DenseWeights initial = InitDenseWeights(config);
  auto cpu = MakeCpuBackend(config, initial);
  auto cuda = MakeCudaFrom(config, initial);
  ASSERT_NE(cuda, nullptr);
  for (int step = 0; step < 5; ++step) {
    RandomBatch cpu_batch(config, batch_size, 100 + step, 0.3f);
    RandomBatch cuda_batch(config, batch_size, 100 + step, 0.3f);
    // Odd steps also carry a logit offset (the logQ correction's input).
    std::vector<float> offset;
    if (step % 2 == 1) {
      for (uint32_t j = 0; j < batch_size; ++j) offset.push_back(-0.5f * float(j % 7));
    }
    TowerInput cpu_item = cpu_batch.item.Input(), cuda_item = cuda_batch.item.Input();
    cpu_item.logit_offset = offset;
    cuda_item.logit_offset = offset;
    auto cpu_stats = cpu->TrainStep(batch_size, cpu_batch.user.Input(), cpu_item);
    auto cuda_stats = cuda->TrainStep(batch_size, cuda_batch.user.Input(), cuda_item);
    ASSERT_TRUE(cpu_stats.ok()) << cpu_stats.status().ToString();
    ASSERT_TRUE(cuda_stats.ok()) << cuda_stats.status().ToString();
    EXPECT_NEAR(cuda_stats->loss, cpu_stats->loss, 1e-3 * std::abs(cpu_stats->loss) + 1e-6)
        << "step " << step;
    const auto cpu_grads = AllGrads(cpu_batch);
    const auto cuda_grads = AllGrads(cuda_batch);
    for (size_t s = 0; s < cpu_grads.size(); ++s) {
      EXPECT_LT(RelativeDifference(cuda_grads[s], cpu_grads[s]), 1e-3)
          << "step " << step << " slot " << s;
    }
  }
  const DenseWeights cpu_weights = cpu->GetWeights();
  const DenseWeights cuda_weights = cuda->GetWeights();
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    ASSERT_EQ(cuda_weights.tower(tower).size(), cpu_weights.tower(tower).size());
    for (size_t l = 0; l < cpu_weights.tower(tower).size(); ++l) {
      const LinearWeights& a = cuda_weights.tower(tower)[l];
      const LinearWeights& b = cpu_weights.tower(tower)[l];
      EXPECT_LT(RelativeDifference(a.weight, b.weight), 1e-3) << "layer " << l;
      EXPECT_LT(RelativeDifference(a.bias, b.bias), 1e-3) << "layer " << l;
    }
  }
  // Encode a batch of a different size than training used.
  const uint32_t encode_batch = batch_size + 7;
  RandomBatch batch(config, encode_batch, 200, 0.3f);
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    const TowerInput input = (tower == Tower::kUser ? batch.user : batch.item).Input();
    std::vector<float> cpu_out(size_t{encode_batch} * config.output_dim);
    std::vector<float> cuda_out(cpu_out.size());
    ASSERT_TRUE(cpu->Encode(tower, encode_batch, input, cpu_out).ok());
    const Status status = cuda->Encode(tower, encode_batch, input, cuda_out);
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_LT(RelativeDifference(cuda_out, cpu_out), 1e-3);
  }
}

TEST_P(CudaBackendTest, SmallModelMatchesCpu) { ExpectCudaMatchesCpu(SmallConfig(), GetParam()); }

TEST_P(CudaBackendTest, DefaultModelMatchesCpu) { ExpectCudaMatchesCpu(ModelConfig{}, GetParam()); }

INSTANTIATE_TEST_SUITE_P(BatchSizes, CudaBackendTest, ::testing::Values(1u, 6u, 300u));

class CudaBackendChecksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CudaBackendAvailable()) GTEST_SKIP() << "no CUDA support in this build or no device";
  }
};

TEST_F(CudaBackendChecksTest, RejectsMisshapenInputAndKeepsWorking) {
  const ModelConfig config = SmallConfig();
  auto cuda = MakeCudaFrom(config, InitDenseWeights(config));
  ASSERT_NE(cuda, nullptr);
  RandomBatch batch(config, 16, 7);
  batch.item.slots[2].inverse[3] = 99;
  auto stats = cuda->TrainStep(16, batch.user.Input(), batch.item.Input());
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kInvalidArgument);
  batch.item.slots[2].inverse[3] = 0;
  stats = cuda->TrainStep(16, batch.user.Input(), batch.item.Input());
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_TRUE(std::isfinite(stats->loss));
  std::vector<float> too_small(3);
  EXPECT_EQ(cuda->Encode(Tower::kUser, 16, batch.user.Input(), too_small).code(),
            StatusCode::kInvalidArgument);
  DenseWeights wrong = InitDenseWeights(config);
  wrong.user[0].weight.pop_back();
  EXPECT_EQ(cuda->SetWeights(wrong).code(), StatusCode::kInvalidArgument);
}

TEST_F(CudaBackendChecksTest, LossDecreasesOnAFixedBatch) {
  const ModelConfig config = SmallConfig();
  auto cuda = MakeCudaFrom(config, InitDenseWeights(config));
  ASSERT_NE(cuda, nullptr);
  RandomBatch batch(config, 64, 8);
  float first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    auto stats = cuda->TrainStep(64, batch.user.Input(), batch.item.Input());
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    (step == 0 ? first : last) = stats->loss;
  }
  EXPECT_LT(last, 0.75f * first) << "first " << first << " last " << last;
}

}  // namespace
}  // namespace ember::trainer
