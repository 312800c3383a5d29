// Fuzzes the key files of `ember keygen` (common/transport_security.h): the mode byte picks
// ReadKeyPairFile (even) or ReadPublicKeyFile (odd) on the rest as the file's text.
// Corpus: fuzz/corpus/key_file/.
#include <cstddef>
#include <cstdint>

#include "common/transport_security.h"
#include "fuzz/fuzz_support.h"

namespace ember::fuzz {
namespace {

void Read(uint8_t mode, std::string_view text) {
  const std::string path = WriteScratchFile("fuzz.key", text);
  if (mode % 2 == 0) {
    (void)ReadKeyPairFile(path);
  } else {
    (void)ReadPublicKeyFile(path);
  }
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET_WITH_MODE(ember::fuzz::Read)
