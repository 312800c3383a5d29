// Deterministic row initialisation from a counter-based random stream.
#include "embedding/initializer.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/hash.h"

namespace ember::embedding {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
constexpr double kTwoToMinus53 = 1.0 / 9007199254740992.0;

// Element `i` of the stream rooted at `base`, as 64 random bits.
uint64_t StreamBits(uint64_t base, uint64_t i) { return Mix64(base + i * kGolden); }

// Uniform in [0, 1): the top 53 bits.
double UniformClosedOpen(uint64_t bits) { return static_cast<double>(bits >> 11) * kTwoToMinus53; }

// Uniform in (0, 1]: safe to take the logarithm of.
double UniformOpenClosed(uint64_t bits) {
  return static_cast<double>((bits >> 11) + 1) * kTwoToMinus53;
}

// Standard normal values `first` and `first + 1` (first even): Box-Muller over uniforms `first`
// and `first + 1` of the stream.
struct NormalPair {
  double even;
  double odd;
};
NormalPair StandardNormalPair(uint64_t base, uint64_t first) {
  const double radius = std::sqrt(-2.0 * std::log(UniformOpenClosed(StreamBits(base, first))));
  const double angle = 2.0 * std::numbers::pi * UniformClosedOpen(StreamBits(base, first + 1));
  return {radius * std::cos(angle), radius * std::sin(angle)};
}

}  // namespace

void InitializeRow(const InitializerSpec& init, uint64_t seed, uint64_t key,
                   std::span<float> row) {
  const uint64_t base = HashCombine(seed, key);
  switch (init.kind) {
    case InitializerKind::kZeros:
      std::fill(row.begin(), row.end(), 0.0f);
      return;
    case InitializerKind::kNormal:
      for (size_t i = 0; i < row.size(); i += 2) {
        const NormalPair z = StandardNormalPair(base, i);
        row[i] = static_cast<float>(init.mean + init.stddev * z.even);
        if (i + 1 < row.size()) row[i + 1] = static_cast<float>(init.mean + init.stddev * z.odd);
      }
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
