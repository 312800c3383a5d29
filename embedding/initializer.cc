// Deterministic row initialisation from a counter-based random stream.
#include "embedding/initializer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/hash.h"

namespace ember::embedding {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
constexpr double kTwoToMinus53 = 1.0 / 9007199254740992.0;

// Element `i` of the stream rooted at `base`, as 64 random bits.
uint64_t StreamBits(uint64_t base, uint64_t i) { return Mix64(base + i * kGolden); }

// Uniform in [0, 1): the top 53 bits.
double UniformClosedOpen(uint64_t bits) { return static_cast<double>(bits >> 11) * kTwoToMinus53; }

// Natural logarithm of a normal float x in (0, 1], from float +, *, / only (no libm), so its
// result is the same bit for bit on every machine. x = m * 2^e with m in [sqrt(1/2), sqrt(2)),
// ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172, by its series to s^9 (error < 2e-6).
float LogOfUnit(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  int exponent = static_cast<int>((bits >> 23) & 0xff) - 127;
  bits = (bits & 0x007fffffu) | 0x3f800000u;  // the mantissa as a float in [1, 2)
  float m;
  std::memcpy(&m, &bits, sizeof(m));
  if (m > 1.41421356f) {
    m *= 0.5f;
    exponent += 1;
  }
  const float s = (m - 1.0f) / (m + 1.0f);
  const float s2 = s * s;
  const float atanh_twice =
      s * (2.0f + s2 * (2.0f / 3 + s2 * (2.0f / 5 + s2 * (2.0f / 7 + s2 * (2.0f / 9)))));
  return static_cast<float>(exponent) * 0.693147181f + atanh_twice;
}

// Standard normal values into row[0..n), in pairs, by Marsaglia's polar method over points of the
// stream: element j gives v1, v2 uniform in [-1, 1) from its top and middle 24 bits; a point
// with 0 < s = v1^2 + v2^2 < 1 yields v1 * f and v2 * f, f = sqrt(-2 ln(s) / s); others are
// skipped (21.5% of them; a run of 100 skips has probability below 1e-66).
void FillStandardNormal(uint64_t base, float* row, size_t n) {
  constexpr float kTwoToMinus23 = 1.0f / 8388608.0f;
  size_t filled = 0;
  for (uint64_t element = 0; filled < n; ++element) {
    const uint64_t bits = StreamBits(base, element);
    const float v1 = static_cast<float>(bits >> 40) * kTwoToMinus23 - 1.0f;
    const float v2 = static_cast<float>((bits >> 16) & 0xffffff) * kTwoToMinus23 - 1.0f;
    const float s = v1 * v1 + v2 * v2;
    if (s >= 1.0f || s == 0.0f) continue;
    const float f = std::sqrt(-2.0f * LogOfUnit(s) / s);
    row[filled++] = v1 * f;
    if (filled < n) row[filled++] = v2 * f;
  }
}

}  // namespace

void InitializeRow(const InitializerSpec& init, uint64_t seed, uint64_t key, std::span<float> row) {
  const uint64_t base = HashCombine(seed, key);
  switch (init.kind) {
    case InitializerKind::kZeros:
      std::fill(row.begin(), row.end(), 0.0f);
      return;
    case InitializerKind::kNormal:
      FillStandardNormal(base, row.data(), row.size());
      for (float& value : row) value = init.mean + init.stddev * value;
      return;
    case InitializerKind::kUniform: {
      const double width = static_cast<double>(init.high) - init.low;
      for (size_t i = 0; i < row.size(); ++i) {
        const double value = init.low + width * UniformClosedOpen(StreamBits(base, i));
        row[i] = std::min(static_cast<float>(value), init.high);
      }
      return;
    }
  }
  std::fill(row.begin(), row.end(), 0.0f);  // unreachable for a validated spec
}

}  // namespace ember::embedding
