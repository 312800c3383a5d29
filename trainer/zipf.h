// ZipfSampler: draws keys whose popularity follows a truncated power law, as real feature ids do.
#pragma once

#include <cstdint>
#include <random>

namespace ember::trainer {

// A uniform double in [0, 1) from the top 53 bits of one draw: identical on every platform
// (std::uniform_real_distribution is not).
inline double UniformDouble(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

// A uniform integer in [0, n) (n > 0), by multiply-shift; identical on every platform.
inline uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(rng()) * n) >> 64);
}

// Inverse-CDF sampling of P(rank r) ~ (r + 1)^-exponent over ranks [0, vocabulary): draws k from
// the continuous power law on [1, vocabulary + 1) and returns floor(k) - 1. Rank 0 is the most
// popular.
class ZipfSampler {
 public:
  // vocabulary >= 1; exponent >= 0 (0 is uniform). With `scramble`, a rank's key is the bijection
  // Mix64(rank ^ salt), which spreads hot keys over partitions; without it the key is the rank.
  ZipfSampler(uint64_t vocabulary, double exponent, bool scramble = true, uint64_t salt = 0);

  // The rank for a uniform u in [0, 1); non-decreasing in u.
  uint64_t Rank(double u) const;
  uint64_t KeyOfRank(uint64_t rank) const;

  uint64_t operator()(double u) const { return KeyOfRank(Rank(u)); }
  uint64_t operator()(std::mt19937_64& rng) const { return (*this)(UniformDouble(rng)); }

  uint64_t vocabulary() const { return vocabulary_; }
  double exponent() const { return exponent_; }

 private:
  uint64_t vocabulary_;
  double exponent_;
  bool scramble_;
  uint64_t salt_;
  bool log_uniform_;    // exponent == 1: k = (vocabulary + 1)^u
  double log_vocab_;    // ln(vocabulary + 1)
  double one_minus_s_;  // a = 1 - exponent
  double span_;         // (vocabulary + 1)^a - 1, via expm1: accurate when a is small
};

}  // namespace ember::trainer
