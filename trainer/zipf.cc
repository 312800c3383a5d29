// ZipfSampler: closed-form inverse CDF of a truncated power law.
#include "trainer/zipf.h"

#include <cmath>

#include "common/check.h"
#include "common/hash.h"

namespace ember::trainer {

ZipfSampler::ZipfSampler(uint64_t vocabulary, double exponent, bool scramble, uint64_t salt)
    : vocabulary_(vocabulary), exponent_(exponent), scramble_(scramble), salt_(salt) {
  EMBER_CHECK(vocabulary >= 1, "ZipfSampler needs a vocabulary of at least 1");
  EMBER_CHECK(exponent >= 0 && std::isfinite(exponent), "ZipfSampler exponent", exponent);
  // The continuous law runs over [1, vocabulary + 1) so that every rank r = floor(k) - 1, the last
  // one included, gets the mass of [r + 1, r + 2).
  log_vocab_ = std::log(static_cast<double>(vocabulary) + 1.0);
  one_minus_s_ = 1.0 - exponent;
  log_uniform_ = std::abs(one_minus_s_) < 1e-9;
  span_ = std::expm1(one_minus_s_ * log_vocab_);
}

uint64_t ZipfSampler::Rank(double u) const {
  double k;
  if (log_uniform_) {
    k = std::exp(u * log_vocab_);
  } else {
    // k = (1 + u * ((V + 1)^a - 1))^(1/a)
    k = std::exp(std::log1p(u * span_) / one_minus_s_);
  }
  const double rank = std::floor(k) - 1.0;
  if (!(rank > 0)) return 0;  // also catches NaN
  if (rank >= static_cast<double>(vocabulary_ - 1)) return vocabulary_ - 1;
  return static_cast<uint64_t>(rank);
}

uint64_t ZipfSampler::KeyOfRank(uint64_t rank) const {
  return scramble_ ? Mix64(rank ^ salt_) : rank;
}

}  // namespace ember::trainer
