// Crc32c: the SSE4.2 path (three interleaved streams joined by Crc32cCombine's shift), a
// table-driven one for other CPUs, and the combination of checksums by multiplication modulo the
// polynomial.
#include "common/crc32c.h"

#include <array>
#include <cstring>

namespace ember {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78;  // reflected

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kPolynomial : 0);
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

// a * b modulo the polynomial, both reflected (x^0 is the top bit).
constexpr uint32_t MultiplyModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t bit = uint32_t{1} << 31; bit != 0; bit >>= 1) {
    if (a & bit) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPolynomial : b >> 1;
  }
  return product;
}

// x^(2^k) modulo the polynomial, for every k a shift by a 64-bit count of bytes needs (2^3 bits
// a byte).
constexpr size_t kPowerCount = 64 + 3;
constexpr std::array<uint32_t, kPowerCount> MakePowers() {
  std::array<uint32_t, kPowerCount> powers{};
  uint32_t power = uint32_t{1} << 30;  // x^1
  for (uint32_t& entry : powers) {
    entry = power;
    power = MultiplyModP(power, power);
  }
  return powers;
}

constexpr std::array<uint32_t, kPowerCount> kPowers = MakePowers();

// A CRC register advanced over `bytes` zero bytes: multiplied by x^(8 * bytes).
uint32_t ShiftByZeros(uint32_t crc, uint64_t bytes) {
  for (size_t k = 3; bytes != 0; bytes >>= 1, ++k) {
    if (bytes & 1) crc = MultiplyModP(kPowers[k], crc);
  }
  return crc;
}

uint32_t Portable(const unsigned char* p, size_t size, uint32_t crc) {
  for (size_t i = 0; i < size; ++i) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// One stream: the instruction's latency (3 cycles) bounds it at 8 bytes per 3 cycles.
__attribute__((target("sse4.2"))) uint32_t OneStream(const unsigned char* p, size_t size,
                                                      uint32_t crc) {
  uint64_t wide = crc;
  for (; size >= 8; p += 8, size -= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));
    wide = __builtin_ia32_crc32di(wide, word);
  }
  crc = static_cast<uint32_t>(wide);
  for (; size > 0; ++p, --size) crc = __builtin_ia32_crc32qi(crc, *p);
  return crc;
}

// Below this, three streams do not pay for joining them.
constexpr size_t kThreeStreamBytes = 3 * 1024;

// Three independent streams over the thirds of the range keep the instruction's pipeline full;
// the second and third start from zero and are joined by shifting what precedes them.
__attribute__((target("sse4.2"))) uint32_t Hardware(const unsigned char* p, size_t size,
                                                     uint32_t crc) {
  if (size < kThreeStreamBytes) return OneStream(p, size, crc);
  const size_t third = size / 3 / 8 * 8;
  const unsigned char* a = p;
  const unsigned char* b = p + third;
  const unsigned char* c = p + 2 * third;
  uint64_t crc_a = crc, crc_b = 0, crc_c = 0;
  for (size_t done = 0; done < third; done += 8) {
    uint64_t word_a, word_b, word_c;
    std::memcpy(&word_a, a + done, 8);
    std::memcpy(&word_b, b + done, 8);
    std::memcpy(&word_c, c + done, 8);
    crc_a = __builtin_ia32_crc32di(crc_a, word_a);
    crc_b = __builtin_ia32_crc32di(crc_b, word_b);
    crc_c = __builtin_ia32_crc32di(crc_c, word_c);
  }
  uint32_t joined = ShiftByZeros(static_cast<uint32_t>(crc_a), third) ^
                    static_cast<uint32_t>(crc_b);
  joined = ShiftByZeros(joined, third) ^ static_cast<uint32_t>(crc_c);
  return OneStream(p + 3 * third, size - 3 * third, joined);
}

bool HasHardware() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32c(const void* data, size_t size, uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  if (HasHardware()) return ~Hardware(p, size, crc);
#endif
  return ~Portable(p, size, crc);
}

uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t size_b) {
  // The registers' inversions cancel: see the derivation in zlib's crc32_combine.
  return ShiftByZeros(crc_a, size_b) ^ crc_b;
}

}  // namespace ember
