// NumPy .npy files (format version 1.0): a little-endian array with its dtype and shape, which
// numpy.load reads directly. Used by `ember export` and `ember lookup`.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace ember {

// Writes a C-order array of uint64 ("<u8"), float32 ("<f4") or uint8 ("|u1") values with `shape`
// (the product of shape must equal values.size(); checked) atomically to `path`.
Status WriteNpy(const std::string& path, std::span<const uint64_t> values,
                const std::vector<uint64_t>& shape);
Status WriteNpy(const std::string& path, std::span<const float> values,
                const std::vector<uint64_t>& shape);
Status WriteNpy(const std::string& path, std::span<const uint8_t> values,
                const std::vector<uint64_t>& shape);

}  // namespace ember
