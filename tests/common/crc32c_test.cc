// Crc32c (the checksum of the push log's records) against the standard's check values, a bitwise
// reference at every length and alignment around the 8-byte steps and the three-stream path, its
// continuation rule, and Crc32cCombine.
#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace ember {
namespace {

// CRC-32C one bit at a time (reflected polynomial 0x82F63B78), continuing from `crc` as
// Crc32c does.
uint32_t BitwiseCrc32c(const unsigned char* data, size_t size, uint32_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? 0x82F63B78u : 0u);
  }
  return ~crc;
}

std::vector<unsigned char> PatternBytes(size_t size) {
  std::vector<unsigned char> bytes(size);
  for (size_t i = 0; i < size; ++i) {
    bytes[i] = static_cast<unsigned char>((i * 131 + 7) ^ (i >> 8));
  }
  return bytes;
}

TEST(Crc32cTest, CheckValuesOfTheStandard) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(Crc32c("", 0), 0u);
  // RFC 3720 (iSCSI), appendix B.4: 32 bytes of zeros, of ones, ascending and descending.
  std::vector<unsigned char> bytes(32, 0x00);
  EXPECT_EQ(Crc32c(bytes.data(), bytes.size()), 0x8A9136AAu);
  bytes.assign(32, 0xFF);
  EXPECT_EQ(Crc32c(bytes.data(), bytes.size()), 0x62A8AB43u);
  std::iota(bytes.begin(), bytes.end(), 0);
  EXPECT_EQ(Crc32c(bytes.data(), bytes.size()), 0x46DD794Eu);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(31 - i);
  EXPECT_EQ(Crc32c(bytes.data(), bytes.size()), 0x113FDB5Cu);
}

TEST(Crc32cTest, MatchesABitwiseReferenceAtEveryLengthAndAlignment) {
  const std::vector<unsigned char> bytes = PatternBytes(4096 + 8);
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t size = 0; size <= 300; ++size) {
      ASSERT_EQ(Crc32c(bytes.data() + offset, size),
                BitwiseCrc32c(bytes.data() + offset, size, 0))
          << "offset " << offset << ", " << size << " bytes";
    }
  }
  EXPECT_EQ(Crc32c(bytes.data() + 3, 4096), BitwiseCrc32c(bytes.data() + 3, 4096, 0));
}

TEST(Crc32cTest, ContinuesAcrossPiecesAtAnySplit) {
  const std::vector<unsigned char> bytes = PatternBytes(200);
  const uint32_t whole = Crc32c(bytes.data(), bytes.size());
  for (size_t split = 0; split <= bytes.size(); ++split) {
    const uint32_t first = Crc32c(bytes.data(), split);
    EXPECT_EQ(Crc32c(bytes.data() + split, bytes.size() - split, first), whole)
        << "split at " << split;
  }
  // Continuing from a checksum of other bytes is the reference's continuation too.
  EXPECT_EQ(Crc32c(bytes.data(), 77, 0x12345678u), BitwiseCrc32c(bytes.data(), 77, 0x12345678u));
}

// Large ranges go three streams at once: lengths around where that starts, and beyond, at every
// alignment.
TEST(Crc32cTest, LargeRangesMatchTheBitwiseReference) {
  const std::vector<unsigned char> bytes = PatternBytes((size_t{1} << 20) + 64);
  for (const size_t size : {size_t{3071}, size_t{3072}, size_t{3073}, size_t{3079}, size_t{3080},
                            size_t{4095}, size_t{10000}, size_t{65537}, (size_t{1} << 20) + 3}) {
    for (size_t offset = 0; offset < 8; ++offset) {
      ASSERT_EQ(Crc32c(bytes.data() + offset, size, 0x9e3779b9u),
                BitwiseCrc32c(bytes.data() + offset, size, 0x9e3779b9u))
          << "offset " << offset << ", " << size << " bytes";
    }
  }
}

TEST(Crc32cTest, CombiningChecksumsEqualsTheChecksumOfTheJoinedBytes) {
  const std::vector<unsigned char> bytes = PatternBytes(20000);
  for (const size_t size : {size_t{0}, size_t{1}, size_t{9}, size_t{300}, size_t{20000}}) {
    for (const size_t split : {size_t{0}, std::min<size_t>(1, size), size / 3, size / 2, size}) {
      const uint32_t first = Crc32c(bytes.data(), split);
      const uint32_t second = Crc32c(bytes.data() + split, size - split);
      EXPECT_EQ(Crc32cCombine(first, second, size - split), Crc32c(bytes.data(), size))
          << size << " bytes split at " << split;
    }
  }
  // A prefix known only later, as a push log record's segment number is.
  const std::string prefix = "segment 7";
  EXPECT_EQ(Crc32cCombine(Crc32c(prefix.data(), prefix.size()), Crc32c(bytes.data(), 5000), 5000),
            Crc32c(bytes.data(), 5000, Crc32c(prefix.data(), prefix.size())));
}

}  // namespace
}  // namespace ember
