// Tests for the CPU backend: loss and gradients against an independent double-precision
// reference and finite differences, learning progress, input checks and Encode.
#include "trainer/cpu_backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "random_tower_batch.h"

namespace ember::trainer {
namespace {

using testing::RandomBatch;
using testing::RandomSlot;
using testing::RandomTower;

ModelConfig TinyConfig() {
  ModelConfig config;
  config.embedding_dim = 4;
  config.user_slots = 2;
  config.item_slots = 2;
  config.hidden = {8, 6};
  config.output_dim = 5;
  config.seed = 3;
  return config;
}

ModelConfig Frozen(ModelConfig config) {
  config.learning_rate = 0;
  return config;
}

// One tower's normalised outputs for every sample of `tower`, in double precision.
std::vector<std::vector<double>> ReferenceEncode(const ModelConfig& config,
                                               const std::vector<LinearWeights>& layers,
                                               const RandomTower& tower) {
  const size_t dim = config.embedding_dim;
  std::vector<std::vector<double>> outputs;
  const RandomSlot& first = tower.slots[0];
  const size_t samples = first.offsets.empty() ? first.inverse.size() : first.offsets.size() - 1;
  for (uint32_t b = 0; b < samples; ++b) {
    std::vector<double> x;
    for (const auto& slot : tower.slots) {
      if (slot.offsets.empty()) {
        for (size_t d = 0; d < dim; ++d) x.push_back(slot.rows[slot.inverse[b] * dim + d]);
        continue;
      }
      std::vector<double> mean(dim, 0.0);
      const uint32_t begin = slot.offsets[b], end = slot.offsets[b + 1];
      for (uint32_t j = begin; j < end; ++j) {
        for (size_t d = 0; d < dim; ++d) mean[d] += slot.rows[slot.inverse[j] * dim + d];
      }
      for (size_t d = 0; d < dim; ++d) x.push_back(end > begin ? mean[d] / (end - begin) : 0.0);
    }
    for (size_t l = 0; l < layers.size(); ++l) {
      std::vector<double> y(layers[l].out);
      for (uint32_t o = 0; o < layers[l].out; ++o) {
        double sum = layers[l].bias[o];
        for (uint32_t i = 0; i < layers[l].in; ++i)
          sum += layers[l].weight[o * layers[l].in + i] * x[i];
        y[o] = l + 1 < layers.size() ? std::max(sum, 0.0) : sum;
      }
      x = std::move(y);
    }
    double norm = 0;
    for (double v : x) norm += v * v;
    norm = std::sqrt(norm);
    for (double& v : x) v /= norm;
    outputs.push_back(std::move(x));
  }
  return outputs;
}

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double dot = 0;
  for (size_t k = 0; k < a.size(); ++k) dot += a[k] * b[k];
  return dot;
}

// The model's in-batch softmax loss in double precision, written independently of the backend:
// user b against every item sample (the batch's positives, then any shared negatives).
double ReferenceLoss(const ModelConfig& config, const DenseWeights& weights, RandomBatch& batch,
                     const std::vector<float>& logit_offset = {}) {
  const auto users = ReferenceEncode(config, weights.user, batch.user);
  const auto items = ReferenceEncode(config, weights.item, batch.item);
  double loss = 0;
  for (uint32_t b = 0; b < batch.batch; ++b) {
    std::vector<double> logits(items.size());
    for (uint32_t j = 0; j < items.size(); ++j) {
      double dot = 0;
      for (size_t k = 0; k < users[b].size(); ++k) dot += users[b][k] * items[j][k];
      logits[j] = dot / config.temperature - (logit_offset.empty() ? 0.0 : logit_offset[j]);
    }
    const double top = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (double v : logits) sum += std::exp(v - top);
    loss += std::log(sum) + top - logits[b];
  }
  return loss / batch.batch;
}

// A sampled loss in double precision: user b against item b and items B + b N .. B + b N + N-1.
double ReferenceSampledLoss(const ModelConfig& config, const DenseWeights& weights,
                            RandomBatch& batch) {
  const auto users = ReferenceEncode(config, weights.user, batch.user);
  const auto items = ReferenceEncode(config, weights.item, batch.item);
  const uint32_t n = config.negatives;
  auto softplus = [](double x) { return std::log1p(std::exp(x)); };
  double loss = 0;
  for (uint32_t b = 0; b < batch.batch; ++b) {
    std::vector<double> s = {Dot(users[b], items[b]) / config.temperature};
    for (uint32_t c = 0; c < n; ++c) {
      s.push_back(Dot(users[b], items[batch.batch + b * n + c]) / config.temperature);
    }
    switch (config.loss) {
      case LossKind::kSampledSoftmax: {
        double sum = 0;
        for (double v : s) sum += std::exp(v);
        loss += std::log(sum) - s[0];
        break;
      }
      case LossKind::kBce:
        loss += softplus(-s[0]);
        for (uint32_t c = 1; c <= n; ++c) loss += softplus(s[c]);
        break;
      case LossKind::kBpr:
        for (uint32_t c = 1; c <= n; ++c) loss += softplus(-(s[0] - s[c])) / n;
        break;
      case LossKind::kInBatchSoftmax:
        ADD_FAILURE() << "not a sampled loss";
    }
  }
  return loss / batch.batch;
}

float StepLoss(Backend& backend, RandomBatch& batch) {
  auto stats = backend.TrainStep(batch.batch, batch.user.Input(), batch.item.Input());
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return stats.ok() ? stats->loss : NAN;
}

TEST(CpuBackendTest, LossMatchesDoublePrecisionReference) {
  const ModelConfig config = TinyConfig();
  const DenseWeights weights = InitDenseWeights(config);
  auto backend = MakeCpuBackend(config, weights);
  RandomBatch batch(config, 6, 11);
  const double expected = ReferenceLoss(config, weights, batch);
  EXPECT_NEAR(StepLoss(*backend, batch), expected, 1e-5 * std::abs(expected));
}

TEST(CpuBackendTest, LogitOffsetIsSubtractedFromEachItemsColumn) {
  const ModelConfig config = TinyConfig();
  const DenseWeights weights = InitDenseWeights(config);
  RandomBatch batch(config, 6, 11);
  const std::vector<float> offset = {-1.5f, 0.0f, 2.0f, -0.25f, 0.75f, -3.0f};
  const double expected = ReferenceLoss(config, weights, batch, offset);
  auto backend = MakeCpuBackend(config, weights);
  TowerInput item = batch.item.Input();
  item.logit_offset = offset;
  auto stats = backend->TrainStep(batch.batch, batch.user.Input(), item);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_NEAR(stats->loss, expected, 1e-5 * std::abs(expected));
  EXPECT_GT(std::abs(expected - ReferenceLoss(config, weights, batch)), 1e-3);

  // A wrong-sized offset, or one on the user tower, is rejected.
  const std::vector<float> short_offset(5, 0.0f);
  item.logit_offset = short_offset;
  EXPECT_EQ(backend->TrainStep(batch.batch, batch.user.Input(), item).status().code(),
            StatusCode::kInvalidArgument);
  TowerInput user = batch.user.Input();
  user.logit_offset = offset;
  EXPECT_EQ(backend->TrainStep(batch.batch, user, batch.item.Input()).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(CpuBackendTest, ZeroLearningRateLeavesWeightsUnchanged) {
  const ModelConfig config = Frozen(TinyConfig());
  const DenseWeights initial = InitDenseWeights(config);
  auto backend = MakeCpuBackend(config, initial);
  RandomBatch batch(config, 6, 12);
  const float first = StepLoss(*backend, batch);
  EXPECT_EQ(StepLoss(*backend, batch), first);
  const DenseWeights after = backend->GetWeights();
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    for (size_t l = 0; l < initial.tower(tower).size(); ++l) {
      EXPECT_EQ(after.tower(tower)[l].weight, initial.tower(tower)[l].weight);
      EXPECT_EQ(after.tower(tower)[l].bias, initial.tower(tower)[l].bias);
    }
  }
}

// d(loss)/d(row entry) by central differences on a frozen backend, against the unique-row
// gradients of a training step from the same weights. The batch reuses rows across samples, so
// this also checks the scatter-add of duplicate keys.
// With `multi_valued`, the second slot of each tower holds 0 to 3 rows per sample.
void ExpectRowGradientsMatchFiniteDifferences(const ModelConfig& config,
                                              bool multi_valued = false) {
  const DenseWeights weights = InitDenseWeights(config);
  RandomBatch batch(config, 6, 13);
  if (multi_valued) {
    batch.user.slots[1].MakeMultiValued(batch.batch, batch.rng);
    batch.item.slots[1].MakeMultiValued(ItemSamples(config, batch.batch), batch.rng);
  }

  auto trained = MakeCpuBackend(config, weights);
  const float loss = StepLoss(*trained, batch);
  // Every step overwrites all gradient buffers, so keep the analytic ones aside first.
  std::vector<std::vector<float>> analytic_grads;
  for (RandomTower* tower : {&batch.user, &batch.item}) {
    for (const auto& slot : tower->slots) analytic_grads.push_back(slot.grads);
  }
  auto frozen = MakeCpuBackend(Frozen(config), weights);
  EXPECT_EQ(StepLoss(*frozen, batch), loss);

  // Small enough that no ReLU of the tiny model changes side within a step.
  constexpr float kStep = 2e-3f;
  size_t checked = 0;
  size_t slot_index = 0;
  for (RandomTower* tower : {&batch.user, &batch.item}) {
    for (auto& slot : tower->slots) {
      const std::vector<float>& analytic = analytic_grads[slot_index++];
      for (size_t i = 0; i < slot.rows.size(); ++i) {
        const float original = slot.rows[i];
        slot.rows[i] = original + kStep;
        const float plus = StepLoss(*frozen, batch);
        slot.rows[i] = original - kStep;
        const float minus = StepLoss(*frozen, batch);
        slot.rows[i] = original;
        const double numeric = (double{plus} - double{minus}) / (2.0 * kStep);
        const double scale = std::max({std::abs(numeric), std::abs(double{analytic[i]}), 1e-2});
        EXPECT_LT(std::abs(numeric - analytic[i]) / scale, 2e-2)
            << "row entry " << i << ": numeric " << numeric << " analytic " << analytic[i];
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0u);
}

TEST(CpuBackendTest, UniqueRowGradientsMatchFiniteDifferences) {
  ExpectRowGradientsMatchFiniteDifferences(TinyConfig());
}

TEST(CpuBackendTest, MultiValuedSlotsAverageTheirRows) {
  const ModelConfig config = TinyConfig();
  const DenseWeights weights = InitDenseWeights(config);
  RandomBatch batch(config, 6, 17);
  batch.user.slots[1].MakeMultiValued(6, batch.rng);
  batch.item.slots[1].MakeMultiValued(6, batch.rng);
  const double expected = ReferenceLoss(config, weights, batch);
  auto backend = MakeCpuBackend(config, weights);
  EXPECT_NEAR(StepLoss(*backend, batch), expected, 1e-5 * std::abs(expected));
  // A row no sample uses gets no gradient.
  RandomSlot& slot = batch.user.slots[1];
  const size_t dim = config.embedding_dim;
  for (size_t row = 0; row < slot.rows.size() / dim; ++row) {
    if (std::find(slot.inverse.begin(), slot.inverse.end(), row) != slot.inverse.end()) continue;
    for (size_t d = 0; d < dim; ++d) EXPECT_EQ(slot.grads[row * dim + d], 0.0f);
  }
  // Offsets that do not cover inverse are refused.
  slot.offsets.back() -= 1;
  auto refused = backend->TrainStep(6, batch.user.Input(), batch.item.Input());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("offsets"), std::string_view::npos);
}

TEST(CpuBackendTest, MultiValuedRowGradientsMatchFiniteDifferences) {
  ExpectRowGradientsMatchFiniteDifferences(TinyConfig(), /*multi_valued=*/true);
}

// Mixed negatives: each user scores the batch's items and the batch's shared negatives.
ModelConfig WithSharedNegatives(uint32_t negatives) {
  ModelConfig config = TinyConfig();
  config.negatives = negatives;
  return config;
}

TEST(CpuBackendTest, SharedNegativesJoinEveryUsersSoftmax) {
  const ModelConfig config = WithSharedNegatives(3);
  const DenseWeights weights = InitDenseWeights(config);
  RandomBatch batch(config, 6, 11);
  ASSERT_EQ(batch.item.slots[0].inverse.size(), 9u);  // 6 positives, then 3 for the batch
  const std::vector<float> offset = {-1.5f, 0.0f, 2.0f, -0.25f, 0.75f, -3.0f, 0.5f, -1.0f, 1.0f};
  for (const std::vector<float>& used : {std::vector<float>{}, offset}) {
    const double expected = ReferenceLoss(config, weights, batch, used);
    auto backend = MakeCpuBackend(config, weights);
    TowerInput item = batch.item.Input();
    item.logit_offset = used;
    auto stats = backend->TrainStep(batch.batch, batch.user.Input(), item);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_NEAR(stats->loss, expected, 1e-5 * std::abs(expected));
  }
  // The negatives count: the same batch without them has a lower loss.
  RandomBatch positives_only(TinyConfig(), 6, 11);
  EXPECT_LT(ReferenceLoss(TinyConfig(), weights, positives_only),
            ReferenceLoss(config, weights, batch));
  // An offset for the positives alone no longer fits.
  auto backend = MakeCpuBackend(config, weights);
  TowerInput item = batch.item.Input();
  const std::vector<float> short_offset(offset.begin(), offset.begin() + 6);
  item.logit_offset = short_offset;
  EXPECT_EQ(backend->TrainStep(batch.batch, batch.user.Input(), item).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(CpuBackendTest, SharedNegativeGradientsMatchFiniteDifferences) {
  ExpectRowGradientsMatchFiniteDifferences(WithSharedNegatives(4));
  ExpectRowGradientsMatchFiniteDifferences(WithSharedNegatives(4), /*multi_valued=*/true);
}

ModelConfig WithLoss(LossKind loss, uint32_t negatives) {
  ModelConfig config = TinyConfig();
  config.loss = loss;
  config.negatives = negatives;
  config.temperature = 0.5f;
  return config;
}

class SampledLossTest : public ::testing::TestWithParam<LossKind> {};

TEST_P(SampledLossTest, LossMatchesDoublePrecisionReference) {
  const ModelConfig config = WithLoss(GetParam(), 3);
  const DenseWeights weights = InitDenseWeights(config);
  RandomBatch batch(config, 6, 11);
  ASSERT_EQ(batch.item.slots[0].inverse.size(), 24u);  // 6 positives, 3 negatives each
  const double expected = ReferenceSampledLoss(config, weights, batch);
  auto backend = MakeCpuBackend(config, weights);
  EXPECT_NEAR(StepLoss(*backend, batch), expected, 1e-5 * std::abs(expected));
}

TEST_P(SampledLossTest, UniqueRowGradientsMatchFiniteDifferences) {
  ExpectRowGradientsMatchFiniteDifferences(WithLoss(GetParam(), 2));
  ExpectRowGradientsMatchFiniteDifferences(WithLoss(GetParam(), 2), /*multi_valued=*/true);
}

TEST_P(SampledLossTest, LossDecreasesAndRefusesALogitOffset) {
  ModelConfig config = WithLoss(GetParam(), 4);
  config.hidden = {32, 16};
  config.output_dim = 8;
  auto backend = MakeCpuBackend(config, InitDenseWeights(config));
  RandomBatch batch(config, 16, 15);
  const float first = StepLoss(*backend, batch);
  float last = first;
  for (int step = 0; step < 40; ++step) last = StepLoss(*backend, batch);
  EXPECT_LT(last, 0.9f * first) << LossName(GetParam());
  const std::vector<float> offset(16, 0.0f);
  TowerInput item = batch.item.Input();
  item.logit_offset = offset;
  auto refused = backend->TrainStep(16, batch.user.Input(), item);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("in-batch softmax only"), std::string_view::npos);
  // An item tower without the negatives does not fit the model.
  RandomBatch in_batch(TinyConfig(), 16, 15);
  auto misshapen = backend->TrainStep(16, batch.user.Input(), in_batch.item.Input());
  EXPECT_EQ(misshapen.status().code(), StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Losses, SampledLossTest,
                         ::testing::Values(LossKind::kSampledSoftmax, LossKind::kBce,
                                           LossKind::kBpr),
                         [](const auto& info) { return std::string(LossName(info.param)); });

// Adam's first step moves every weight by about learning_rate against the sign of its gradient;
// the gradients here come from finite differences of the double-precision reference.
TEST(CpuBackendTest, FirstAdamStepMovesWeightsAgainstTheirGradient) {
  const ModelConfig config = TinyConfig();
  const DenseWeights before = InitDenseWeights(config);
  RandomBatch batch(config, 6, 14);
  auto backend = MakeCpuBackend(config, before);
  (void)StepLoss(*backend, batch);
  const DenseWeights after = backend->GetWeights();

  DenseWeights probe = before;
  size_t checked = 0;
  auto check = [&](std::vector<float>& values, const std::vector<float>& stepped,
                   const std::vector<float>& original) {
    for (size_t i = 0; i < values.size(); ++i) {
      constexpr float kStep = 1e-3f;
      values[i] = original[i] + kStep;
      const double plus = ReferenceLoss(config, probe, batch);
      values[i] = original[i] - kStep;
      const double minus = ReferenceLoss(config, probe, batch);
      values[i] = original[i];
      const double gradient = (plus - minus) / (2.0 * kStep);
      const double moved = double{stepped[i]} - original[i];
      if (std::abs(gradient) < 1e-4) continue;  // sign not reliably resolved
      EXPECT_NEAR(moved, gradient > 0 ? -config.learning_rate : config.learning_rate,
                  1e-2 * config.learning_rate)
          << "weight " << i << " gradient " << gradient;
      ++checked;
    }
  };
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    for (size_t l = 0; l < before.tower(tower).size(); ++l) {
      LinearWeights& layer = probe.tower(tower)[l];
      check(layer.weight, after.tower(tower)[l].weight, before.tower(tower)[l].weight);
      check(layer.bias, after.tower(tower)[l].bias, before.tower(tower)[l].bias);
    }
  }
  EXPECT_GT(checked, 100u);
}

TEST(CpuBackendTest, LossDecreasesOnAFixedBatch) {
  ModelConfig config = TinyConfig();
  config.hidden = {32, 16};
  config.output_dim = 8;
  auto backend = MakeCpuBackend(config, InitDenseWeights(config));
  RandomBatch batch(config, 16, 15);
  std::vector<float> losses;
  for (int step = 0; step < 50; ++step) losses.push_back(StepLoss(*backend, batch));
  // Each block of ten steps averages below the one before, and the end is well below the start.
  for (size_t block = 1; block < 5; ++block) {
    const auto mean = [&](size_t b) {
      return std::accumulate(losses.begin() + 10 * b, losses.begin() + 10 * (b + 1), 0.0f) / 10;
    };
    EXPECT_LT(mean(block), mean(block - 1)) << "steps " << 10 * block << "..";
  }
  EXPECT_TRUE(std::isfinite(losses.back()));
  EXPECT_LT(losses.back(), 0.75f * losses.front())
      << "first " << losses.front() << " last " << losses.back();
}

TEST(CpuBackendTest, DefaultModelTrainsOnALargerBatch) {
  const ModelConfig config;
  auto backend = MakeCpuBackend(config, InitDenseWeights(config));
  RandomBatch batch(config, 256, 16, 0.05f);
  const float first = StepLoss(*backend, batch);
  EXPECT_NEAR(first, std::log(256.0f), 2.0f);
  float last = first;
  for (int step = 0; step < 5; ++step) last = StepLoss(*backend, batch);
  EXPECT_LT(last, first);
}

TEST(CpuBackendTest, RejectsMisshapenInput) {
  const ModelConfig config = TinyConfig();
  auto backend = MakeCpuBackend(config, InitDenseWeights(config));
  auto expect_invalid = [&](RandomBatch& batch, uint32_t batch_size, const char* fragment) {
    auto stats = backend->TrainStep(batch_size, batch.user.Input(), batch.item.Input());
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(stats.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(stats.status().message().find(fragment), std::string_view::npos)
        << stats.status().ToString();
  };
  {
    RandomBatch batch(config, 6, 17);
    batch.user.slots.pop_back();
    expect_invalid(batch, 6, "user tower input has 1 slots");
  }
  {
    RandomBatch batch(config, 6, 17);
    batch.item.slots[1].rows.pop_back();
    expect_invalid(batch, 6, "item slot 1: unique_rows");
  }
  {
    RandomBatch batch(config, 6, 17);
    batch.user.slots[0].grads.resize(4);
    expect_invalid(batch, 6, "user slot 0: unique_grads");
  }
  {
    RandomBatch batch(config, 6, 17);
    expect_invalid(batch, 5, "inverse has 6 entries but the batch has 5");
  }
  {
    RandomBatch batch(config, 6, 17);
    batch.item.slots[0].inverse[2] = 1000;
    expect_invalid(batch, 6, "item slot 0: inverse[2] = 1000");
  }
  {
    RandomBatch batch(config, 6, 17);
    expect_invalid(batch, 0, "batch_size");
  }
  {
    RandomBatch batch(config, 6, 17);
    std::vector<float> out(5);
    const Status status = backend->Encode(Tower::kUser, 6, batch.user.Input(), out);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  }
  {
    DenseWeights wrong = InitDenseWeights(config);
    wrong.item.pop_back();
    EXPECT_EQ(backend->SetWeights(wrong).code(), StatusCode::kInvalidArgument);
  }
}

TEST(CpuBackendTest, EncodeWritesUnitRowsWithoutGradientBuffers) {
  const ModelConfig config = TinyConfig();
  auto backend = MakeCpuBackend(config, InitDenseWeights(config));
  RandomBatch batch(config, 6, 18);
  for (Tower tower : {Tower::kUser, Tower::kItem}) {
    TowerInput input = (tower == Tower::kUser ? batch.user : batch.item).Input();
    for (SlotInput& slot : input.slots) slot.unique_grads = {};
    std::vector<float> out(6 * config.output_dim, NAN);
    ASSERT_TRUE(backend->Encode(tower, 6, input, out).ok());
    for (uint32_t b = 0; b < 6; ++b) {
      double norm = 0;
      for (uint32_t j = 0; j < config.output_dim; ++j) {
        norm += double{out[b * config.output_dim + j]} * out[b * config.output_dim + j];
      }
      EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-5);
    }
  }
}

TEST(CpuBackendTest, SetWeightsRoundTrips) {
  const ModelConfig config = TinyConfig();
  auto backend = MakeCpuBackend(config, InitDenseWeights(config));
  ModelConfig other = config;
  other.seed = 99;
  const DenseWeights replacement = InitDenseWeights(other);
  ASSERT_TRUE(backend->SetWeights(replacement).ok());
  const DenseWeights read = backend->GetWeights();
  EXPECT_EQ(read.user[0].weight, replacement.user[0].weight);
  EXPECT_EQ(read.item[2].bias, replacement.item[2].bias);
  EXPECT_EQ(backend->name(), "cpu");
}

TEST(CpuBackendTest, ResumesExactlyFromItsState) {
  const ModelConfig config = TinyConfig();
  auto trained = MakeCpuBackend(config, InitDenseWeights(config));
  auto fresh = MakeCpuBackend(config, InitDenseWeights(config));
  testing::ExpectStateResumesExactly(config, *trained, *fresh);
}

TEST(BackendFactoryTest, MakesCpuAndRejectsUnknownKinds) {
  auto cpu = MakeBackend("cpu", TinyConfig());
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  EXPECT_EQ((*cpu)->name(), "cpu");
  auto automatic = MakeBackend("auto", TinyConfig());
  ASSERT_TRUE(automatic.ok()) << automatic.status().ToString();
  EXPECT_EQ((*automatic)->name(), CudaBackendAvailable() ? "cuda" : "cpu");
  EXPECT_EQ(MakeBackend("tpu", TinyConfig()).status().code(), StatusCode::kInvalidArgument);
  if (!CudaBackendAvailable()) {
    EXPECT_EQ(MakeBackend("cuda", TinyConfig()).status().code(), StatusCode::kFailedPrecondition);
  }
  ModelConfig broken = TinyConfig();
  broken.temperature = 0;
  EXPECT_EQ(MakeBackend("cpu", broken).status().code(), StatusCode::kInvalidArgument);
  // The CUDA backend trains the in-batch softmax only: auto picks the CPU for other losses.
  const ModelConfig bpr = WithLoss(LossKind::kBpr, 2);
  EXPECT_EQ((*MakeBackend("auto", bpr))->name(), "cpu");
  auto cuda_bpr = MakeBackend("cuda", bpr);
  EXPECT_EQ(cuda_bpr.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(cuda_bpr.status().message().find("in-batch softmax without shared negatives only"),
            std::string_view::npos);
  // So does the in-batch softmax with shared negatives.
  ModelConfig mixed = TinyConfig();
  mixed.negatives = 8;
  EXPECT_EQ((*MakeBackend("auto", mixed))->name(), "cpu");
  EXPECT_EQ(MakeBackend("cuda", mixed).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ember::trainer
