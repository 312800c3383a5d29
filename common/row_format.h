// RowFormat: how row values and gradients travel between trainers and servers.
#pragma once

#include <cstdint>

namespace ember {

// How row values travel (servers always store float32). fp16 halves the bytes of rows and
// gradients at a relative rounding error of at most 2^-11 for normal values.
enum class RowFormat : uint8_t { kF32 = 0, kF16 = 1 };

}  // namespace ember
