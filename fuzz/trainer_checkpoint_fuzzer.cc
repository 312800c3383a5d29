// Fuzzes the reader of trainer checkpoint files (trainer/trainer_checkpoint.h): the file alone, then
// against the shapes of FuzzModel() (fuzz/fuzz_model.h). The first byte is the FileMode
// (fuzz/fuzz_support.h). Corpus: fuzz/corpus/trainer_checkpoint/.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_model.h"
#include "fuzz/fuzz_support.h"
#include "trainer/trainer_checkpoint.h"

namespace ember::fuzz {
namespace {

void Read(uint8_t mode, std::string_view file) {
  const std::string path = WriteScratchFile(
      "trainer-0.bin", mode % 2 == 1 ? SealChecksummedFile(file) : std::string(file));
  if (trainer::ReadTrainerCheckpoint(path).ok()) {
    (void)trainer::ReadTrainerCheckpoint(path, FuzzModel());
  }
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET_WITH_MODE(ember::fuzz::Read)
