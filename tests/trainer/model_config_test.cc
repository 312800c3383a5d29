// Tests for the `model:` config section and the initial dense weights.
#include "trainer/model_config.h"

#include <gtest/gtest.h>

#include <cmath>

#include "trainer/dense_weights.h"

namespace ember::trainer {
namespace {

TEST(ModelConfigTest, ReadsEveryField) {
  const YAML::Node node = YAML::Load(
      "{embedding_dim: 16, user_slots: 2, item_slots: 4, hidden: [32, 8], output_dim: 12,"
      " temperature: 0.1, learning_rate: 0.01, beta1: 0.8, beta2: 0.99, epsilon: 1.0e-6,"
      " seed: 9}");
  auto config = ModelConfigFromYaml(node, "model");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->embedding_dim, 16u);
  EXPECT_EQ(config->user_slots, 2u);
  EXPECT_EQ(config->item_slots, 4u);
  EXPECT_EQ(config->hidden, (std::vector<uint32_t>{32, 8}));
  EXPECT_EQ(config->output_dim, 12u);
  EXPECT_FLOAT_EQ(config->temperature, 0.1f);
  EXPECT_FLOAT_EQ(config->learning_rate, 0.01f);
  EXPECT_FLOAT_EQ(config->beta1, 0.8f);
  EXPECT_FLOAT_EQ(config->beta2, 0.99f);
  EXPECT_FLOAT_EQ(config->epsilon, 1e-6f);
  EXPECT_EQ(config->seed, 9u);
}

TEST(ModelConfigTest, AbsentKeysKeepDefaults) {
  auto config = ModelConfigFromYaml(YAML::Load("{output_dim: 32}"), "model");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->output_dim, 32u);
  EXPECT_EQ(config->embedding_dim, 64u);
  EXPECT_EQ(config->hidden, (std::vector<uint32_t>{256, 128}));
  EXPECT_TRUE(ValidateModelConfig(ModelConfig{}).ok());
}

TEST(ModelConfigTest, ErrorsNameTheField) {
  auto expect_error = [](const char* yaml, const char* field) {
    auto config = ModelConfigFromYaml(YAML::Load(yaml), "model");
    ASSERT_FALSE(config.ok()) << yaml;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(config.status().message().find(field), std::string_view::npos)
        << config.status().ToString();
  };
  expect_error("{learing_rate: 0.1}", "model.learing_rate");
  expect_error("{embedding_dim: 0}", "model.embedding_dim");
  expect_error("{embedding_dim: abc}", "model.embedding_dim");
  expect_error("{hidden: 5}", "model.hidden");
  expect_error("{hidden: [8, 0]}", "model.hidden[1]");
  expect_error("{temperature: 0}", "model.temperature");
  expect_error("{learning_rate: -1}", "model.learning_rate");
  expect_error("{beta2: 1.0}", "model.beta2");
  expect_error("{epsilon: 0}", "model.epsilon");
  expect_error("[1, 2]", "model");
  expect_error("{loss: hinge}", "model.loss: 'hinge' is not one of");
  expect_error("{loss: bpr}", "model.negatives: loss bpr needs sampled negatives");
  expect_error("{loss: bce, negatives: 5000}", "model.negatives: 5000 exceeds");
}

TEST(ModelConfigTest, SampledLossesAndTheirItemSamples) {
  auto config = ModelConfigFromYaml(YAML::Load("{loss: sampled_softmax, negatives: 7}"), "model");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->loss, LossKind::kSampledSoftmax);
  EXPECT_EQ(ItemSamples(*config, 10), 80u);
  EXPECT_EQ(ItemSamples(ModelConfig{}, 10), 10u);
  EXPECT_FALSE(SharesNegatives(*config));
  // The in-batch softmax with negatives: the batch shares them.
  auto mixed = ModelConfigFromYaml(YAML::Load("{negatives: 4}"), "model");
  ASSERT_TRUE(mixed.ok()) << mixed.status().ToString();
  EXPECT_TRUE(SharesNegatives(*mixed));
  EXPECT_EQ(ItemSamples(*mixed, 10), 14u);
  for (LossKind loss : {LossKind::kInBatchSoftmax, LossKind::kSampledSoftmax, LossKind::kBce,
                        LossKind::kBpr}) {
    const std::string yaml = "{loss: " + std::string(LossName(loss)) + ", negatives: " +
                             (loss == LossKind::kInBatchSoftmax ? "0" : "2") + "}";
    auto parsed = ModelConfigFromYaml(YAML::Load(yaml), "model");
    ASSERT_TRUE(parsed.ok()) << yaml;
    EXPECT_EQ(parsed->loss, loss);
  }
}

TEST(DenseWeightsTest, InitialisationIsDeterministicAndBounded) {
  ModelConfig config;
  config.hidden = {16};
  config.output_dim = 8;
  const DenseWeights a = InitDenseWeights(config);
  const DenseWeights b = InitDenseWeights(config);
  ASSERT_EQ(a.user.size(), 2u);
  EXPECT_EQ(a.user[0].in, 3u * 64);
  EXPECT_EQ(a.user[0].out, 16u);
  EXPECT_EQ(a.user[1].out, 8u);
  EXPECT_EQ(a.user[0].weight, b.user[0].weight);
  EXPECT_EQ(a.item[1].bias, b.item[1].bias);
  EXPECT_NE(a.user[0].weight, a.item[0].weight);
  config.seed = 2;
  EXPECT_NE(InitDenseWeights(config).user[0].weight, a.user[0].weight);
  for (const LinearWeights& layer : a.user) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(layer.in));
    for (float w : layer.weight) EXPECT_LE(std::abs(w), bound);
    for (float w : layer.bias) EXPECT_LE(std::abs(w), bound);
  }
  EXPECT_TRUE(CheckDenseWeightsShape(config, a).ok());
  DenseWeights broken = a;
  broken.user[1].bias.pop_back();
  EXPECT_EQ(CheckDenseWeightsShape(config, broken).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ember::trainer
