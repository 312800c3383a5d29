// Tests for each CUDA kernel and fused op of the CUDA backend against a plain CPU computation, at
// odd row counts (1, 7, 251, 4099) so partial blocks and warps are covered. Skipped when the
// build has no CUDA support or the machine has no CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "trainer/backend.h"
#if EMBER_HAVE_CUDA
#include "trainer/cuda/kernel_ops.h"
#endif

namespace ember::trainer {
namespace {

class CudaKernelsTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  void SetUp() override {
    if (!CudaBackendAvailable()) GTEST_SKIP() << "no CUDA support in this build or no device";
  }
};

#if EMBER_HAVE_CUDA

using cuda::AdamSettings;

// Element-wise float-rounding tolerance of the non-trivial kernels: 1e-5 relative to the
// reference value plus 1e-6 absolute for values near zero. Pure data movement must be exact.
constexpr double kRelative = 1e-5, kAbsolute = 1e-6;

void ExpectClose(const std::vector<float>& actual, const std::vector<float>& expected,
                 const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  size_t failures = 0;
  for (size_t i = 0; i < actual.size() && failures < 5; ++i) {
    const double tolerance = kRelative * std::abs(double{expected[i]}) + kAbsolute;
    if (std::abs(double{actual[i]} - expected[i]) > tolerance) {
      ADD_FAILURE() << what << "[" << i << "]: " << actual[i] << " vs " << expected[i];
      ++failures;
    }
  }
}

std::vector<float> RandomValues(size_t count, std::mt19937& rng, float low = -1, float high = 1) {
  std::uniform_real_distribution<float> value(low, high);
  std::vector<float> values(count);
  for (float& v : values) v = value(rng);
  return values;
}

std::vector<uint32_t> RandomInverse(uint32_t batch, uint32_t unique, std::mt19937& rng) {
  std::uniform_int_distribution<uint32_t> pick(0, unique - 1);
  std::vector<uint32_t> inverse(batch);
  for (uint32_t& i : inverse) i = pick(rng);
  return inverse;
}

TEST_P(CudaKernelsTest, GatherConcatenatesSlots) {
  const uint32_t batch = GetParam(), dim = 24, slots = 3, width = slots * dim;
  std::mt19937 rng(batch);
  std::vector<float> input(size_t{batch} * width, -7.0f), expected = input;
  for (uint32_t s = 0; s < slots; ++s) {
    const uint32_t unique = std::max<uint32_t>(1, batch / 2 + s);
    const std::vector<float> rows = RandomValues(size_t{unique} * dim, rng);
    const std::vector<uint32_t> inverse = RandomInverse(batch, unique, rng);
    ASSERT_TRUE(cuda::RunGatherSlotRows(rows, inverse, dim, width, s * dim, input).ok());
    for (uint32_t b = 0; b < batch; ++b) {
      for (uint32_t d = 0; d < dim; ++d) {
        expected[size_t{b} * width + s * dim + d] = rows[size_t{inverse[b]} * dim + d];
      }
    }
  }
  EXPECT_EQ(input, expected);
}

TEST_P(CudaKernelsTest, ScatterAddSumsSharedRows) {
  const uint32_t batch = GetParam(), dim = 24, width = 3 * dim, slot_offset = dim;
  const uint32_t unique = std::max<uint32_t>(1, batch / 3);
  std::mt19937 rng(batch + 1);
  const std::vector<float> grad_input = RandomValues(size_t{batch} * width, rng);
  const std::vector<uint32_t> inverse = RandomInverse(batch, unique, rng);
  std::vector<float> grads(size_t{unique} * dim, 0.0f);
  std::vector<double> sums(grads.size(), 0.0);
  for (uint32_t b = 0; b < batch; ++b) {
    for (uint32_t d = 0; d < dim; ++d) {
      sums[size_t{inverse[b]} * dim + d] += grad_input[size_t{b} * width + slot_offset + d];
    }
  }
  ASSERT_TRUE(
      cuda::RunScatterAddSlotGrads(grad_input, inverse, dim, width, slot_offset, grads).ok());
  ExpectClose(grads, std::vector<float>(sums.begin(), sums.end()), "unique_grads");
}

TEST_P(CudaKernelsTest, BiasReluAndReluBackward) {
  const uint32_t rows = GetParam(), cols = 37;
  std::mt19937 rng(rows + 2);
  const std::vector<float> z = RandomValues(size_t{rows} * cols, rng);
  const std::vector<float> bias = RandomValues(cols, rng);
  for (bool relu : {true, false}) {
    std::vector<float> actual = z, expected = z;
    for (size_t i = 0; i < expected.size(); ++i) {
      expected[i] += bias[i % cols];
      if (relu) expected[i] = std::max(expected[i], 0.0f);
    }
    ASSERT_TRUE(cuda::RunAddBiasActivate(actual, bias, rows, relu).ok());
    EXPECT_EQ(actual, expected) << "relu " << relu;
    if (!relu) continue;
    std::vector<float> grad = RandomValues(actual.size(), rng), expected_grad = grad;
    for (size_t i = 0; i < grad.size(); ++i) {
      if (!(actual[i] > 0)) expected_grad[i] = 0;
    }
    ASSERT_TRUE(cuda::RunReluBackward(grad, actual).ok());
    EXPECT_EQ(grad, expected_grad);
  }
}

TEST_P(CudaKernelsTest, L2NormalizeForwardAndBackward) {
  const uint32_t rows = GetParam();
  for (uint32_t dim : {12u, 64u, 100u}) {
    std::mt19937 rng(rows * 7 + dim);
    std::vector<float> y = RandomValues(size_t{rows} * dim, rng);
    std::fill(y.begin(), y.begin() + dim, 0.0f);  // a zero row takes the min_norm clamp
    const std::vector<float> du = RandomValues(y.size(), rng);
    const float min_norm = 1e-12f;
    std::vector<float> u_expected(y.size()), norms_expected(rows), dy_expected(y.size());
    for (uint32_t r = 0; r < rows; ++r) {
      const size_t base = size_t{r} * dim;
      double squares = 0, projection = 0;
      for (uint32_t j = 0; j < dim; ++j) squares += double{y[base + j]} * y[base + j];
      const double norm = std::max(std::sqrt(squares), double{min_norm});
      norms_expected[r] = static_cast<float>(norm);
      for (uint32_t j = 0; j < dim; ++j) u_expected[base + j] = float(y[base + j] / norm);
      for (uint32_t j = 0; j < dim; ++j) projection += double{u_expected[base + j]} * du[base + j];
      for (uint32_t j = 0; j < dim; ++j) {
        dy_expected[base + j] = float((du[base + j] - u_expected[base + j] * projection) / norm);
      }
    }
    std::vector<float> u, norms, dy;
    ASSERT_TRUE(cuda::RunL2Normalize(y, rows, dim, min_norm, u, norms).ok());
    ExpectClose(u, u_expected, "u");
    ExpectClose(norms, norms_expected, "norms");
    // The zero row's gradient is scaled by 1 / min_norm; compare the rest.
    ASSERT_TRUE(cuda::RunL2NormalizeBackward(u_expected, norms_expected, du, rows, dim, dy).ok());
    ExpectClose(std::vector<float>(dy.begin() + dim, dy.end()),
                std::vector<float>(dy_expected.begin() + dim, dy_expected.end()), "dy");
  }
}

TEST_P(CudaKernelsTest, SoftmaxCrossEntropyWithAndWithoutOffset) {
  const uint32_t batch = GetParam();
  std::mt19937 rng(batch + 3);
  const std::vector<float> logits = RandomValues(size_t{batch} * batch, rng, -5, 5);
  const std::vector<float> offset = RandomValues(batch, rng, -3, 0);
  for (bool with_offset : {false, true}) {
    std::vector<float> expected(logits.size()), row_loss_expected(batch);
    double loss_sum = 0;
    for (uint32_t b = 0; b < batch; ++b) {
      const float* row = logits.data() + size_t{b} * batch;
      std::vector<double> shifted(batch);
      double row_max = -INFINITY, sum = 0;
      for (uint32_t j = 0; j < batch; ++j) {
        shifted[j] = double{row[j]} - (with_offset ? offset[j] : 0.0f);
        row_max = std::max(row_max, shifted[j]);
      }
      for (uint32_t j = 0; j < batch; ++j) sum += std::exp(shifted[j] - row_max);
      const double loss = std::log(sum) + row_max - shifted[b];
      row_loss_expected[b] = float(loss);
      loss_sum += loss;
      for (uint32_t j = 0; j < batch; ++j) {
        const double softmax = std::exp(shifted[j] - row_max) / sum;
        expected[size_t{b} * batch + j] = float((softmax - (j == b ? 1.0 : 0.0)) / batch);
      }
    }
    std::vector<float> actual = logits, row_loss;
    float mean = 0;
    const std::vector<float> none;
    ASSERT_TRUE(cuda::RunSoftmaxCrossEntropy(actual, batch, with_offset ? offset : none,
                                             row_loss, &mean)
                    .ok());
    ExpectClose(actual, expected, with_offset ? "grad (offset)" : "grad");
    ExpectClose(row_loss, row_loss_expected, "row_loss");
    EXPECT_NEAR(mean, loss_sum / batch, kRelative * std::abs(loss_sum / batch) + kAbsolute);
  }
}

TEST_P(CudaKernelsTest, AdamMatchesReference) {
  const uint32_t count = GetParam() * 3;
  std::mt19937 rng(count + 4);
  std::vector<float> weights = RandomValues(count, rng), grads = RandomValues(count, rng, -1e-2f,
                                                                              1e-2f);
  std::vector<float> first = RandomValues(count, rng, -1e-3f, 1e-3f);
  std::vector<float> second = RandomValues(count, rng, 0, 1e-5f);
  AdamSettings settings;
  settings.step = 7;
  const double step_size = settings.learning_rate / (1 - std::pow(double{settings.beta1}, 7));
  const double bias2 = std::sqrt(1 - std::pow(double{settings.beta2}, 7));
  std::vector<float> w_expected(count), m_expected(count), v_expected(count);
  for (uint32_t i = 0; i < count; ++i) {
    const double m = settings.beta1 * double{first[i]} + (1 - double{settings.beta1}) * grads[i];
    const double v = settings.beta2 * double{second[i]} +
                     (1 - double{settings.beta2}) * double{grads[i]} * grads[i];
    m_expected[i] = float(m);
    v_expected[i] = float(v);
    w_expected[i] = float(weights[i] - step_size * m / (std::sqrt(v) / bias2 + settings.epsilon));
  }
  ASSERT_TRUE(cuda::RunAdam(weights, grads, first, second, settings).ok());
  ExpectClose(first, m_expected, "first_moment");
  ExpectClose(second, v_expected, "second_moment");
  ExpectClose(weights, w_expected, "weights");
}

#else

TEST_P(CudaKernelsTest, NeedsCuda) {}

#endif

INSTANTIATE_TEST_SUITE_P(Rows, CudaKernelsTest, ::testing::Values(1u, 7u, 251u, 4099u));

}  // namespace
}  // namespace ember::trainer
