// MissingRows: what a read-only lookup (Client::Lookup, `ember lookup`) returns for a key that has
// no row in its table. A lookup never creates the row either way.
#pragma once

#include <cstdint>

namespace ember {

enum class MissingRows : uint8_t {
  kInitial = 0,  // the table's initial row for the key, computed as a pull would create it
  kFlag = 1,     // zeros, and the key's found flag 0 (found flags are 1 for keys with a row)
};

}  // namespace ember
