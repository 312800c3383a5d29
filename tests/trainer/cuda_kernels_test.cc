// Tests for each CUDA kernel and fused op of the CUDA backend against a plain CPU computation, at
// odd row counts (1, 7, 251, 4099) so partial blocks and warps are covered. Skipped when the
// build has no CUDA support or the machine has no CUDA device. The ops' argument checks run on
// the host and are tested without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "trainer/backend.h"
#if EMBER_HAVE_CUDA
#include "trainer/cuda/adam_op.h"
#include "trainer/cuda/gather_ops.h"
#include "trainer/cuda/gemm.h"
#include "trainer/cuda/kernel_ops.h"
#include "trainer/cuda/loss_ops.h"
#include "trainer/cuda/tower_ops.h"
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

// A device address that is never dereferenced: the argument checks only look at pointers.
template <typename T>
T* FakeDevicePointer(uintptr_t address = 4096) {
  return reinterpret_cast<T*>(address);
}

void ExpectInvalidArgumentNaming(const Status& status, const std::string& words) {
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_NE(status.message().find(words), std::string::npos) << status.ToString();
}

cuda::SlotColumns ValidSlot() {
  return cuda::SlotColumns{FakeDevicePointer<const uint32_t>(), 7, 24, 72, 48};
}

TEST(CudaOpArgumentsTest, WellFormedArgumentsAreAccepted) {
  float* data = FakeDevicePointer<float>();
  EXPECT_TRUE((cuda::GatherSlotRows{ValidSlot(), data, data}.CanImplement().ok()));
  EXPECT_TRUE((cuda::ScatterAddSlotGrads{ValidSlot(), data, data}.CanImplement().ok()));
  EXPECT_TRUE((cuda::AddBiasActivate{data, data, 7, 37, true}.CanImplement().ok()));
  EXPECT_TRUE((cuda::ReluBackward{data, data, 0}.CanImplement().ok()));
  EXPECT_TRUE((cuda::L2Normalize{data, 7, 12, 1e-12f, data, data}.CanImplement().ok()));
  EXPECT_TRUE((cuda::L2NormalizeBackward{data, data, data, 7, 12, data}.CanImplement().ok()));
  EXPECT_TRUE((cuda::Fill{data, 7, 1.0f}.CanImplement().ok()));
  EXPECT_TRUE((cuda::SoftmaxCrossEntropy{data, 7, nullptr, data, data}.CanImplement().ok()));
  EXPECT_TRUE((cuda::SoftmaxCrossEntropy{data, 7, data, data, data}.CanImplement().ok()));
  EXPECT_TRUE((cuda::Adam{data, data, data, data, 7, FakeDevicePointer<const cuda::AdamStep>()}
                   .CanImplement()
                   .ok()));
  EXPECT_TRUE((cuda::RowMajorGemm{.m = 7, .n = 5, .k = 3, .a = data, .b = data, .c = data}
                   .CanImplement()
                   .ok()));
  EXPECT_TRUE((cuda::ColumnSums{7, 5, data, data, data}.CanImplement().ok()));
}

TEST(CudaOpArgumentsTest, NullPointerIsRejectedByName) {
  float* data = FakeDevicePointer<float>();
  cuda::SlotColumns slot = ValidSlot();
  slot.inverse = nullptr;
  ExpectInvalidArgumentNaming(cuda::GatherSlotRows{slot, data, data}.CanImplement(),
                              "GatherSlotRows: inverse is null");
  ExpectInvalidArgumentNaming(cuda::ScatterAddSlotGrads{ValidSlot(), data, nullptr}.CanImplement(),
                              "ScatterAddSlotGrads: unique_grads is null");
  ExpectInvalidArgumentNaming(cuda::L2Normalize{data, 7, 12, 1e-12f, data, nullptr}.CanImplement(),
                              "L2Normalize: norms is null");
  ExpectInvalidArgumentNaming(cuda::Adam{data, data, data, data, 7, nullptr}.CanImplement(),
                              "Adam: step is null");
  ExpectInvalidArgumentNaming(
      cuda::RowMajorGemm{.m = 7, .n = 5, .k = 3, .a = data, .b = nullptr, .c = data}.CanImplement(),
      "RowMajorGemm: b is null");
}

TEST(CudaOpArgumentsTest, MisalignedPointerIsRejected) {
  float* data = FakeDevicePointer<float>();
  float* misaligned = FakeDevicePointer<float>(4098);
  ExpectInvalidArgumentNaming(cuda::Fill{misaligned, 7, 0.0f}.CanImplement(),
                              "Fill: data is not aligned to 4 bytes");
  ExpectInvalidArgumentNaming(
      cuda::SoftmaxCrossEntropy{data, 7, misaligned, data, data}.CanImplement(),
      "column_offset is not aligned");
}

TEST(CudaOpArgumentsTest, SlotReachingPastTheInputIsRejected) {
  float* data = FakeDevicePointer<float>();
  cuda::SlotColumns slot = ValidSlot();
  slot.slot_offset = slot.input_width - slot.dim + 1;
  ExpectInvalidArgumentNaming(cuda::GatherSlotRows{slot, data, data}.CanImplement(),
                              "slot_offset + dim is 73, over the limit of 72");
  slot = ValidSlot();
  slot.dim = 0;
  ExpectInvalidArgumentNaming(cuda::ScatterAddSlotGrads{slot, data, data}.CanImplement(),
                              "dim is 0");
}

TEST(CudaOpArgumentsTest, SizesTheKernelsDivideByMustNotBeZero) {
  float* data = FakeDevicePointer<float>();
  ExpectInvalidArgumentNaming(
      cuda::SoftmaxCrossEntropy{data, 0, nullptr, data, data}.CanImplement(),
      "SoftmaxCrossEntropy: batch is 0");
  ExpectInvalidArgumentNaming(cuda::AddBiasActivate{data, data, 7, 0, false}.CanImplement(),
                              "AddBiasActivate: cols is 0");
  ExpectInvalidArgumentNaming(
      cuda::L2NormalizeBackward{data, data, data, 7, 0, data}.CanImplement(), "dim is 0");
}

TEST(CudaOpArgumentsTest, GemmBeyondWhatCublasTakesIsRejected) {
  float* data = FakeDevicePointer<float>();
  const uint32_t too_big = uint32_t{INT_MAX} + 1;
  ExpectInvalidArgumentNaming(
      cuda::RowMajorGemm{.m = 7, .n = too_big, .k = 3, .a = data, .b = data, .c = data}
          .CanImplement(),
      "RowMajorGemm: n is 2147483648, over the limit of 2147483647");
  ExpectInvalidArgumentNaming(cuda::ColumnSums{0, 5, data, data, data}.CanImplement(),
                              "ColumnSums: rows is 0");
}

// Run checks first: a rejected op reports InvalidArgument, where a launch (with or without a
// device) would have reported a CUDA error as Internal.
TEST(CudaOpArgumentsTest, RunOfARejectedOpLaunchesNothing) {
  float* data = FakeDevicePointer<float>();
  EXPECT_EQ((cuda::Fill{nullptr, 7, 0.0f}.Run(nullptr).code()), StatusCode::kInvalidArgument);
  EXPECT_EQ((cuda::SoftmaxCrossEntropy{data, 0, nullptr, data, data}.Run(nullptr).code()),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((cuda::RowMajorGemm{.m = 0, .n = 5, .k = 3, .a = data, .b = data, .c = data}
                 .Run(nullptr)
                 .code()),
            StatusCode::kInvalidArgument);
}

#else

TEST_P(CudaKernelsTest, NeedsCuda) {}

#endif

INSTANTIATE_TEST_SUITE_P(Rows, CudaKernelsTest, ::testing::Values(1u, 7u, 251u, 4099u));

}  // namespace
}  // namespace ember::trainer
