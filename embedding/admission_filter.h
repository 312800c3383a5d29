// AdmissionFilter: counts how often keys without a stored row occur, so that a table stores a
// row only for a key seen admit_after times (feature admission, as production recommenders do to
// keep one-off ids out of memory). Until then the key reads its deterministic initial row and its
// updates are dropped.
//
// The counts live in a count-min sketch (3 rows of 2^20 saturating 8-bit counters, 3 MiB per
// table): a count can only be overestimated (a key may be admitted a little early, never late),
// and memory does not grow with the number of distinct keys. With one thread the counts are exact
// functions of the key sequence; concurrent increments of one counter may lose one.
//
// Thread-safety: CountAndAdmit may be called from many threads at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "common/hash.h"

namespace ember::embedding {

class AdmissionFilter {
 public:
  static constexpr uint32_t kMaxAdmitAfter = 255;

  // admit_after in [2, kMaxAdmitAfter] (ValidateTableSpec checks it).
  explicit AdmissionFilter(uint32_t admit_after)
      : admit_after_(admit_after), counters_(new std::atomic<uint8_t>[kDepth * kWidth]()) {}

  // Counts one more occurrence of `key`; true once it has occurred admit_after times.
  bool CountAndAdmit(uint64_t key) {
    uint32_t estimate = kMaxAdmitAfter;
    for (uint32_t d = 0; d < kDepth; ++d) {
      std::atomic<uint8_t>& counter =
          counters_[d * kWidth + (Mix64(key + d * 0x9e3779b97f4a7c15ULL) & (kWidth - 1))];
      uint8_t value = counter.load(std::memory_order_relaxed);
      if (value < kMaxAdmitAfter) counter.store(++value, std::memory_order_relaxed);
      estimate = std::min<uint32_t>(estimate, value);
    }
    return estimate >= admit_after_;
  }

 private:
  static constexpr uint32_t kDepth = 3;
  static constexpr uint64_t kWidth = uint64_t{1} << 20;

  const uint32_t admit_after_;
  std::unique_ptr<std::atomic<uint8_t>[]> counters_;
};

}  // namespace ember::embedding
