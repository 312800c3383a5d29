// fp16 <-> fp32 conversion for rows and gradients on the wire (IEEE binary16, round to nearest
// even; values beyond +-65504 become infinities, tiny ones subnormals or zero).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace ember {

inline uint16_t FloatToHalf(float value) {
  return std::bit_cast<uint16_t>(static_cast<_Float16>(value));
}

inline float HalfToFloat(uint16_t bits) { return static_cast<float>(std::bit_cast<_Float16>(bits)); }

inline void FloatsToHalves(const float* in, size_t n, uint16_t* out) {
  for (size_t i = 0; i < n; ++i) out[i] = FloatToHalf(in[i]);
}

inline void HalvesToFloats(const uint16_t* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = HalfToFloat(in[i]);
}

}  // namespace ember
