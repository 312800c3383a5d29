// The flags word a tiered table keeps after each row in memory (its weights and state): CLOCK's
// reference bit, whether the row differs from disk, where its last change was logged, and the
// hints pinning it. Guarded, with the row, by its partition's stripe lock.
#pragma once

#include <cstdint>
#include <cstring>

namespace ember::embedding {

enum RowFlag : uint32_t {
  kReferenced = 1,    // used since the CLOCK hand last passed
  kDirty = 2,         // differs from disk (or was never written)
  kOnDisk = 4,        // a version of the row is durable: in RocksDB, or in the push log (which
                      // a restart replays into RocksDB); counted in the tier's durable rows
  kChosen = 8,        // picked as an eviction victim, not yet dropped
  kLogged = 1 << 15,  // the row's last change is in the push log, in the segment the bits
                      // kLogSegmentBits name or a later one (see LoggedAtMost)
};
// Bits 4..14 of the flags: the low bits of the push log segment that was active when the row's last
// change was appended (with kLogged).
constexpr uint32_t kLogSegmentShift = 4;
constexpr uint32_t kLogSegmentBits = uint32_t{0x7ff} << kLogSegmentShift;
inline uint32_t WithLogSegment(uint32_t flags, uint64_t segment) {
  return (flags & ~kLogSegmentBits) | kLogged |
         ((static_cast<uint32_t>(segment) << kLogSegmentShift) & kLogSegmentBits);
}
// Whether a changed row's last change may be only in push log segments numbered `through` or
// lower: not logged at all, or logged while such a segment was active. (While rows stay changed,
// segments are retired within a few numbers of each other, far inside the bits' range.)
inline bool LoggedAtMost(uint32_t flags, uint64_t through) {
  if (!(flags & kLogged)) return true;
  constexpr uint32_t kMask = kLogSegmentBits >> kLogSegmentShift;
  const uint32_t segment = (flags & kLogSegmentBits) >> kLogSegmentShift;
  const uint32_t behind = (static_cast<uint32_t>(through) - segment) & kMask;
  return behind <= kMask / 2;
}
// The high 16 bits of the flags count the hints pinning the row (at most the hints a table holds).
constexpr uint32_t kPinOne = uint32_t{1} << 16;
inline uint32_t PinCount(uint32_t flags) { return flags >> 16; }

inline uint32_t LoadFlags(const float* word) {
  uint32_t flags;
  std::memcpy(&flags, word, sizeof(flags));
  return flags;
}
inline void StoreFlags(float* word, uint32_t flags) { std::memcpy(word, &flags, sizeof(flags)); }

}  // namespace ember::embedding
