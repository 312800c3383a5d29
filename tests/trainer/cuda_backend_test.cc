// Tests for the CUDA backend: it must compute what the CPU backend computes. Skipped when the
// build has no CUDA support or the machine has no CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

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

// Element-wise: |a - b| <= 1e-4 |b| + `floor`, for the entries near zero where float rounding
// of the many-term sums is not relatively small. The default floor is 1e-5 x the largest |b|.
void ExpectElementsClose(const std::vector<float>& actual, const std::vector<float>& expected,
                         const std::string& what, double floor = -1) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double largest = 0;
  for (float v : expected) largest = std::max(largest, std::abs(double{v}));
  size_t failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 5; ++i) {
    const double tolerance =
        1e-4 * std::abs(double{expected[i]}) + (floor >= 0 ? floor : 1e-5 * largest);
    if (std::abs(double{actual[i]} - expected[i]) > tolerance) {
      ADD_FAILURE() << what << "[" << i << "]: " << actual[i] << " vs " << expected[i];
      ++failures;
    }
  }
}

// One full training step of the default model from the same weights on both backends.
TEST_P(CudaBackendTest, OneStepMatchesCpuElementWise) {
  const ModelConfig config;
  const uint32_t batch_size = GetParam();
  const DenseWeights initial = InitDenseWeights(config);
  auto cpu = MakeCpuBackend(config, initial);
  auto cuda = MakeCudaFrom(config, initial);
  ASSERT_NE(cuda, nullptr);
  RandomBatch cpu_batch(config, batch_size, 11, 0.3f), cuda_batch(config, batch_size, 11, 0.3f);
  auto cpu_stats = cpu->TrainStep(batch_size, cpu_batch.user.Input(), cpu_batch.item.Input());
  auto cuda_stats = cuda->TrainStep(batch_size, cuda_batch.user.Input(), cuda_batch.item.Input());
  ASSERT_TRUE(cpu_stats.ok() && cuda_stats.ok());
  EXPECT_NEAR(cuda_stats->loss, cpu_stats->loss, 1e-4 * std::abs(cpu_stats->loss) + 1e-7);
  EXPECT_GT(cuda_stats->device_ms, 0.0f);
  const auto cpu_grads = AllGrads(cpu_batch), cuda_grads = AllGrads(cuda_batch);
  for (size_t s = 0; s < cpu_grads.size(); ++s) {
    ExpectElementsClose(cuda_grads[s], cpu_grads[s], "grads of slot " + std::to_string(s));
  }
  // Adam's first step is about +-learning_rate per weight whatever the gradient's size, so where
  // a weight's gradient sum cancels to almost nothing its rounding moves the step: the weights'
  // floor is a tenth of a step.
  const double weight_floor = 0.1 * config.learning_rate;
  const DenseWeights cpu_weights = cpu->GetWeights(), cuda_weights = cuda->GetWeights();
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    for (size_t l = 0; l < cpu_weights.tower(tower).size(); ++l) {
      ExpectElementsClose(cuda_weights.tower(tower)[l].weight, cpu_weights.tower(tower)[l].weight,
                          "weight of layer " + std::to_string(l), weight_floor);
      ExpectElementsClose(cuda_weights.tower(tower)[l].bias, cpu_weights.tower(tower)[l].bias,
                          "bias of layer " + std::to_string(l), weight_floor);
    }
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

TEST_F(CudaBackendChecksTest, ResumesExactlyFromItsState) {
  const ModelConfig config = SmallConfig();
  auto trained = MakeCudaFrom(config, InitDenseWeights(config));
  auto fresh = MakeCudaFrom(config, InitDenseWeights(config));
  ASSERT_NE(trained, nullptr);
  ASSERT_NE(fresh, nullptr);
  testing::ExpectStateResumesExactly(config, *trained, *fresh);
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

// Keeps the first `unique` rows of every slot of `tower` and folds the inverse indices into them,
// so consecutive steps can differ in their unique counts at one batch size.
void ShrinkUniqueRows(RandomTower& tower, uint32_t unique, uint32_t dim) {
  for (auto& slot : tower.slots) {
    const uint32_t kept = std::min<uint32_t>(unique, slot.rows.size() / dim);
    slot.rows.resize(size_t{kept} * dim);
    slot.grads.assign(slot.rows.size(), 0.0f);
    for (uint32_t& i : slot.inverse) i %= kept;
  }
}

// The captured-graph step computes what plain launches compute: two backends, graphs on and off,
// over steps whose unique counts, logit offsets and batch sizes change (the last steps force a
// new capture).
TEST_F(CudaBackendChecksTest, GraphStepMatchesPlainStep) {
  ModelConfig graphed_config = SmallConfig();
  ModelConfig plain_config = graphed_config;
  plain_config.cuda_graphs = false;
  const DenseWeights initial = InitDenseWeights(graphed_config);
  auto graphed = MakeCudaFrom(graphed_config, initial);
  auto plain = MakeCudaFrom(plain_config, initial);
  ASSERT_NE(graphed, nullptr);
  ASSERT_NE(plain, nullptr);
  const uint32_t batches[] = {96, 96, 96, 96, 60, 60, 60};
  for (int step = 0; step < 7; ++step) {
    const uint32_t batch_size = batches[step];
    RandomBatch graphed_batch(graphed_config, batch_size, 300 + step);
    RandomBatch plain_batch(graphed_config, batch_size, 300 + step);
    const uint32_t unique = uint32_t(std::max(1, int(batch_size / 2) - 5 * step));
    for (RandomBatch* batch : {&graphed_batch, &plain_batch}) {
      ShrinkUniqueRows(batch->user, unique, graphed_config.embedding_dim);
      ShrinkUniqueRows(batch->item, unique + 3, graphed_config.embedding_dim);
    }
    std::vector<float> offset;
    if (step == 2 || step == 3 || step == 5) {
      for (uint32_t j = 0; j < batch_size; ++j) offset.push_back(0.25f * float(j % 5));
    }
    TowerInput graphed_item = graphed_batch.item.Input(), plain_item = plain_batch.item.Input();
    graphed_item.logit_offset = offset;
    plain_item.logit_offset = offset;
    auto graphed_stats = graphed->TrainStep(batch_size, graphed_batch.user.Input(), graphed_item);
    auto plain_stats = plain->TrainStep(batch_size, plain_batch.user.Input(), plain_item);
    ASSERT_TRUE(graphed_stats.ok()) << graphed_stats.status().ToString();
    ASSERT_TRUE(plain_stats.ok()) << plain_stats.status().ToString();
    EXPECT_NEAR(graphed_stats->loss, plain_stats->loss, 1e-6 * std::abs(plain_stats->loss))
        << "step " << step;
    const auto graphed_grads = AllGrads(graphed_batch), plain_grads = AllGrads(plain_batch);
    for (size_t s = 0; s < plain_grads.size(); ++s) {
      EXPECT_LE(RelativeDifference(graphed_grads[s], plain_grads[s]), 1e-6)
          << "step " << step << " slot " << s;
    }
  }
  const DenseWeights a = graphed->GetWeights(), b = plain->GetWeights();
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    for (size_t l = 0; l < b.tower(tower).size(); ++l) {
      EXPECT_LE(RelativeDifference(a.tower(tower)[l].weight, b.tower(tower)[l].weight), 1e-6);
      EXPECT_LE(RelativeDifference(a.tower(tower)[l].bias, b.tower(tower)[l].bias), 1e-6);
    }
  }
}

// TF32 matrix products: one step of the default model. The loss stays within 1e-2 of full FP32
// (measured on an H100: 6e-6); the unique-row gradients, whose backward GEMMs round their inputs
// to TF32 several times, within 5e-2 (measured: 2.4e-2).
TEST_F(CudaBackendChecksTest, Tf32StaysCloseToFp32) {
  ModelConfig fp32_config;
  ModelConfig tf32_config = fp32_config;
  tf32_config.tf32 = true;
  const uint32_t batch_size = 1024;
  const DenseWeights initial = InitDenseWeights(fp32_config);
  auto fp32 = MakeCudaFrom(fp32_config, initial);
  auto tf32 = MakeCudaFrom(tf32_config, initial);
  ASSERT_NE(fp32, nullptr);
  ASSERT_NE(tf32, nullptr);
  RandomBatch fp32_batch(fp32_config, batch_size, 21), tf32_batch(fp32_config, batch_size, 21);
  auto fp32_stats = fp32->TrainStep(batch_size, fp32_batch.user.Input(), fp32_batch.item.Input());
  auto tf32_stats = tf32->TrainStep(batch_size, tf32_batch.user.Input(), tf32_batch.item.Input());
  ASSERT_TRUE(fp32_stats.ok() && tf32_stats.ok());
  const double loss_difference =
      std::abs(double{tf32_stats->loss} - fp32_stats->loss) / std::abs(fp32_stats->loss);
  double grad_difference = 0;
  const auto fp32_grads = AllGrads(fp32_batch), tf32_grads = AllGrads(tf32_batch);
  for (size_t s = 0; s < fp32_grads.size(); ++s) {
    grad_difference = std::max(grad_difference, RelativeDifference(tf32_grads[s], fp32_grads[s]));
  }
  std::printf("tf32 vs fp32 at B=%u: loss relative difference %.3g, unique-row gradients %.3g\n",
              batch_size, loss_difference, grad_difference);
  EXPECT_LT(loss_difference, 1e-2);
  EXPECT_LT(grad_difference, 5e-2);
}

}  // namespace
}  // namespace ember::trainer
