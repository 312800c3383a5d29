// Tests for RowOptimizer: each rule against an independent double-precision reference.
#include "embedding/optimizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "embedding/table_config.h"

namespace ember::embedding {
namespace {

constexpr uint32_t kDim = 4;
constexpr int kRows = 3;

// A fixed, varied gradient for (row, step, coordinate), some negative, some zero.
double Gradient(int row, int step, uint32_t i) {
  if ((row + step + static_cast<int>(i)) % 7 == 0) return 0.0;
  return std::sin(1.3 * row + 0.7 * step + 0.31 * i) * (1.0 + row);
}

double InitialWeight(int row, uint32_t i) { return 0.05 * (row + 1) - 0.03 * i; }

void ExpectClose(double expected, float actual, const char* what) {
  EXPECT_NEAR(actual, expected, 1e-5 * std::fabs(expected) + 1e-7) << what;
}

// One row's weights and state in double precision, updated by a reference rule.
struct ReferenceRow {
  std::vector<double> w, a, b;  // a, b: per-coordinate state (acc; m, v; z, n)
  int t = 0;                    // Adam step count
};

void ReferenceStep(const OptimizerSpec& spec, ReferenceRow& r, const std::vector<double>& g) {
  const double lr = spec.learning_rate;
  ++r.t;
  // Weight decay (not FTRL): the L2 penalty's gradient joins the pushed one.
  std::vector<double> g_decayed(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    g_decayed[i] = spec.kind == OptimizerKind::kFtrl ? g[i] : g[i] + spec.weight_decay * r.w[i];
  }
  for (size_t i = 0; i < g.size(); ++i) {
    switch (spec.kind) {
      case OptimizerKind::kSgd:
        r.w[i] -= lr * g_decayed[i];
        break;
      case OptimizerKind::kAdagrad:
        r.a[i] += g_decayed[i] * g_decayed[i];
        r.w[i] -= lr * g_decayed[i] / (std::sqrt(r.a[i]) + spec.epsilon);
        break;
      case OptimizerKind::kAdam: {
        const double b1 = spec.beta1, b2 = spec.beta2;
        r.a[i] = b1 * r.a[i] + (1 - b1) * g_decayed[i];
        r.b[i] = b2 * r.b[i] + (1 - b2) * g_decayed[i] * g_decayed[i];
        const double m_hat = r.a[i] / (1 - std::pow(b1, r.t));
        const double v_hat = r.b[i] / (1 - std::pow(b2, r.t));
        r.w[i] -= lr * m_hat / (std::sqrt(v_hat) + spec.epsilon);
        break;
      }
      case OptimizerKind::kFtrl: {
        // McMahan et al. 2013, Algorithm 1, with alpha = learning_rate.
        const double alpha = lr;
        double& z = r.a[i];
        double& n = r.b[i];
        const double sigma = (std::sqrt(n + g[i] * g[i]) - std::sqrt(n)) / alpha;
        z += g[i] - sigma * r.w[i];
        n += g[i] * g[i];
        if (std::fabs(z) <= spec.l1) {
          r.w[i] = 0;
        } else {
          const double sign = z < 0 ? -1.0 : 1.0;
          r.w[i] = -(z - sign * spec.l1) / ((spec.ftrl_beta + std::sqrt(n)) / alpha + spec.l2);
        }
        break;
      }
    }
  }
}

// Runs `schedule` (row indices, one update each) through both the optimizer and the reference
// and compares weights after every update.
void CheckAgainstReference(const OptimizerSpec& spec, const std::vector<int>& schedule) {
  auto optimizer = RowOptimizer::Create(spec, kDim);
  ASSERT_TRUE(optimizer.ok()) << optimizer.status().ToString();
  const uint32_t state_floats = optimizer->state_floats();
  const double initial_a = spec.kind == OptimizerKind::kAdagrad ? spec.initial_accumulator : 0.0;

  std::vector<std::vector<float>> rows(kRows), states(kRows);
  std::vector<ReferenceRow> reference(kRows);
  for (int r = 0; r < kRows; ++r) {
    for (uint32_t i = 0; i < kDim; ++i) {
      rows[r].push_back(static_cast<float>(InitialWeight(r, i)));
      reference[r].w.push_back(rows[r].back());
    }
    reference[r].a.assign(kDim, initial_a);
    reference[r].b.assign(kDim, 0.0);
    states[r].resize(state_floats);
    optimizer->InitState(states[r]);
  }

  std::vector<int> steps_done(kRows, 0);
  for (int r : schedule) {
    std::vector<double> g(kDim);
    std::vector<float> g_float(kDim);
    for (uint32_t i = 0; i < kDim; ++i) {
      g_float[i] = static_cast<float>(Gradient(r, steps_done[r], i));
      g[i] = g_float[i];
    }
    ++steps_done[r];
    optimizer->Apply(rows[r], states[r], g_float);
    ReferenceStep(spec, reference[r], g);
    for (uint32_t i = 0; i < kDim; ++i) {
      ExpectClose(reference[r].w[i], rows[r][i], "weight");
    }
  }
}

// Three rows, interleaved, at least 5 updates each.
const std::vector<int> kSchedule = {0, 1, 2, 0, 0, 1, 2, 2, 1, 0, 1, 2, 0, 1, 2, 0, 2};

TEST(RowOptimizerTest, StateSizes) {
  OptimizerSpec spec;
  const std::pair<OptimizerKind, uint32_t> expected[] = {{OptimizerKind::kSgd, 0},
                                                         {OptimizerKind::kAdagrad, 8},
                                                         {OptimizerKind::kAdam, 17},
                                                         {OptimizerKind::kFtrl, 16}};
  for (auto [kind, floats] : expected) {
    spec.kind = kind;
    auto optimizer = RowOptimizer::Create(spec, 8);
    ASSERT_TRUE(optimizer.ok());
    EXPECT_EQ(optimizer->state_floats(), floats);
  }
}

TEST(RowOptimizerTest, InitStateUsesInitialAccumulatorForAdagradOnly) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::kAdagrad;
  spec.initial_accumulator = 0.25f;
  auto adagrad = RowOptimizer::Create(spec, 3);
  ASSERT_TRUE(adagrad.ok());
  std::vector<float> state(3, -1.0f);
  adagrad->InitState(state);
  EXPECT_EQ(state, std::vector<float>(3, 0.25f));

  spec.kind = OptimizerKind::kAdam;
  auto adam = RowOptimizer::Create(spec, 3);
  ASSERT_TRUE(adam.ok());
  state.assign(7, -1.0f);
  adam->InitState(state);
  EXPECT_EQ(state, std::vector<float>(7, 0.0f));
}

TEST(RowOptimizerTest, CreateRejectsBadSpecs) {
  OptimizerSpec spec;
  EXPECT_EQ(RowOptimizer::Create(spec, 0).status().code(), StatusCode::kInvalidArgument);
  spec.learning_rate = 0.0f;
  auto bad = RowOptimizer::Create(spec, 4);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("learning_rate"), std::string_view::npos);
  spec.learning_rate = 0.1f;
  spec.beta2 = 1.0f;
  EXPECT_FALSE(RowOptimizer::Create(spec, 4).ok());
}

TEST(RowOptimizerTest, SgdMatchesReference) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::kSgd;
  spec.learning_rate = 0.1f;
  CheckAgainstReference(spec, kSchedule);
}

TEST(RowOptimizerTest, AdagradMatchesReference) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::kAdagrad;
  spec.learning_rate = 0.05f;
  spec.initial_accumulator = 0.1f;
  spec.epsilon = 1e-7f;
  CheckAgainstReference(spec, kSchedule);
}

TEST(RowOptimizerTest, AdamMatchesReference) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::kAdam;
  spec.learning_rate = 0.01f;
  spec.beta1 = 0.9f;
  spec.beta2 = 0.999f;
  spec.epsilon = 1e-8f;
  CheckAgainstReference(spec, kSchedule);
}

TEST(RowOptimizerTest, WeightDecayMatchesReferenceForSgdAdagradAndAdam) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdagrad, OptimizerKind::kAdam}) {
    SCOPED_TRACE(OptimizerKindName(kind));
    OptimizerSpec spec;
    spec.kind = kind;
    spec.learning_rate = 0.05f;
    spec.weight_decay = 0.3f;
    CheckAgainstReference(spec, kSchedule);
  }
}

TEST(RowOptimizerTest, WeightDecayShrinksARowPushedAZeroGradient) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::kSgd;
  spec.learning_rate = 0.5f;
  spec.weight_decay = 0.2f;
  auto optimizer = RowOptimizer::Create(spec, 2);
  ASSERT_TRUE(optimizer.ok());
  std::vector<float> row = {1.0f, -2.0f};
  std::vector<float> state;
  optimizer->Apply(row, state, std::vector<float>{0.0f, 0.0f});
  EXPECT_FLOAT_EQ(row[0], 0.9f);  // 1 - 0.5 * 0.2 * 1
  EXPECT_FLOAT_EQ(row[1], -1.8f);
}

TEST(RowOptimizerTest, FtrlMatchesReference) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::kFtrl;
  spec.learning_rate = 0.1f;
  spec.ftrl_beta = 1.0f;
  spec.l1 = 0.3f;  // large enough that some coordinates are clipped to zero
  spec.l2 = 0.5f;
  CheckAgainstReference(spec, kSchedule);
}

TEST(RowOptimizerTest, FtrlWithoutRegularisationMatchesReference) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::kFtrl;
  spec.learning_rate = 0.5f;
  spec.ftrl_beta = 0.0f;
  CheckAgainstReference(spec, kSchedule);
}

TEST(RowOptimizerTest, FtrlL1ClipsSmallAccumulatedGradientsToZero) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::kFtrl;
  spec.l1 = 10.0f;
  auto optimizer = RowOptimizer::Create(spec, 2);
  ASSERT_TRUE(optimizer.ok());
  std::vector<float> row = {0.5f, -0.5f};
  std::vector<float> state(4);
  optimizer->InitState(state);
  const std::vector<float> grad = {0.1f, -0.2f};
  optimizer->Apply(row, state, grad);
  EXPECT_EQ(row[0], 0.0f);
  EXPECT_EQ(row[1], 0.0f);
}

TEST(RowOptimizerTest, AdamKeepsOneStepCountPerRow) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::kAdam;
  spec.learning_rate = 0.02f;
  // Row 0 is updated five times, row 1 twice; each must get its own bias correction.
  CheckAgainstReference(spec, {0, 1, 0, 0, 1, 0, 0});

  auto optimizer = RowOptimizer::Create(spec, kDim);
  ASSERT_TRUE(optimizer.ok());
  std::vector<float> row_a(kDim, 0.0f), row_b(kDim, 0.0f), alone(kDim, 0.0f);
  std::vector<float> state_a(optimizer->state_floats()), state_b(optimizer->state_floats()),
      state_alone(optimizer->state_floats());
  optimizer->InitState(state_a);
  optimizer->InitState(state_b);
  optimizer->InitState(state_alone);
  const std::vector<float> grad = {0.5f, -0.25f, 1.0f, 0.0f};
  for (int step = 0; step < 5; ++step) optimizer->Apply(row_a, state_a, grad);
  for (int step = 0; step < 2; ++step) optimizer->Apply(row_b, state_b, grad);
  for (int step = 0; step < 2; ++step) optimizer->Apply(alone, state_alone, grad);
  EXPECT_EQ(state_a.back(), 5.0f);
  EXPECT_EQ(state_b.back(), 2.0f);
  EXPECT_EQ(row_b, alone);  // row A's updates do not touch row B's bias correction
}

TEST(RowOptimizerTest, AdamStepCountSaturatesAtTwoToTheTwentyFour) {
  OptimizerSpec spec;
  spec.kind = OptimizerKind::kAdam;
  auto optimizer = RowOptimizer::Create(spec, 1);
  ASSERT_TRUE(optimizer.ok());
  std::vector<float> row = {0.0f};
  std::vector<float> state = {0.0f, 0.0f, 16777216.0f};
  const std::vector<float> grad = {1.0f};
  optimizer->Apply(row, state, grad);
  EXPECT_EQ(state[2], 16777216.0f);
  EXPECT_TRUE(std::isfinite(row[0]));
  EXPECT_LT(row[0], 0.0f);
}

// A step's learning rate (a trainer's schedule) does exactly what the spec's would: the same
// rows and state, step after step, as an optimizer configured with that rate.
TEST(RowOptimizerTest, AStepsLearningRateActsAsTheSpecsWould) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kAdagrad, OptimizerKind::kAdam,
                             OptimizerKind::kFtrl}) {
    SCOPED_TRACE(OptimizerKindName(kind));
    OptimizerSpec configured;
    configured.kind = kind;
    configured.learning_rate = 0.05f;
    OptimizerSpec scheduled = configured;
    scheduled.learning_rate = 0.2f;
    auto base = RowOptimizer::Create(configured, kDim);
    auto reference = RowOptimizer::Create(scheduled, kDim);
    ASSERT_TRUE(base.ok() && reference.ok());
    std::vector<float> row(kDim), state(base->state_floats());
    base->InitState(state);
    for (uint32_t i = 0; i < kDim; ++i) row[i] = static_cast<float>(InitialWeight(0, i));
    std::vector<float> expected_row = row, expected_state = state;
    for (int step = 0; step < 5; ++step) {
      std::vector<float> grad(kDim);
      for (uint32_t i = 0; i < kDim; ++i) grad[i] = static_cast<float>(Gradient(0, step, i));
      base->Apply(row, state, grad, 0.2f);
      reference->Apply(expected_row, expected_state, grad);
    }
    EXPECT_EQ(row, expected_row);
    EXPECT_EQ(state, expected_state);
    EXPECT_NE(row[1], static_cast<float>(InitialWeight(0, 1)));
  }
}

}  // namespace
}  // namespace ember::embedding
