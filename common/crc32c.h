// Crc32c: the CRC-32C (Castagnoli) of a byte range, with the SSE4.2 instruction where the CPU has
// it (three streams at once for large ranges), for checksums written and read by ember alone, such
// as the records of the push log. Reentrant.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {

// CRC-32C of `size` bytes at `data`, continuing from `crc` (0 to start a new checksum), so that
// Crc32c(b, Crc32c(a)) == Crc32c(a + b).
uint32_t Crc32c(const void* data, size_t size, uint32_t crc = 0);

// The CRC-32C of a followed by b, from Crc32c(a), Crc32c(b) and b's size, in O(log size) steps:
// a checksum over bytes computed apart from them (a prefix known only later, such as a push log
// record's segment) costs no second pass over them.
uint32_t Crc32cCombine(uint32_t crc_a, uint32_t crc_b, uint64_t size_b);

}  // namespace ember
