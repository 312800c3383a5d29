// Crc32: the CRC-32 (IEEE 802.3, as zlib and PNG compute it) of a byte range, used to detect
// corrupt or truncated checkpoint files. zlib computes it, so files written by any earlier ember
// (which computed the same polynomial byte by byte) still verify. Reentrant.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember {

// CRC-32 of `size` bytes at `data`, continuing from `crc` (0 to start a new checksum), so that
// Crc32(b, Crc32(a)) == Crc32(a + b).
uint32_t Crc32(const void* data, size_t size, uint32_t crc = 0);

}  // namespace ember
