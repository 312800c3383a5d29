// Fuzzes the plain-text lists of keys ember reads: `ember lookup --keys` (ReadKeyList,
// common/key_list.h) on even modes, and the raw-id maps `ember export` writes beside a table's
// rows (ReadRawIdMap, trainer/raw_id_map.h) on odd ones.
// Corpus: fuzz/corpus/key_list/.
#include <cstddef>
#include <cstdint>
#include <sstream>

#include "common/key_list.h"
#include "fuzz/fuzz_support.h"
#include "trainer/raw_id_map.h"

namespace ember::fuzz {
namespace {

void Read(uint8_t mode, std::string_view text) {
  if (mode % 2 == 0) {
    std::istringstream in{std::string(text)};
    (void)ReadKeyList(in, "fuzz");
  } else {
    (void)trainer::ReadRawIdMap(WriteScratchFile("item.ids.tsv", text), "item");
  }
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET_WITH_MODE(ember::fuzz::Read)
