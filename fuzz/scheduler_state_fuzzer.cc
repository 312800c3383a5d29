// Fuzzes the scheduler's saved state (scheduler/scheduler_state.h) as a restarted scheduler reads
// it from its data directory: the checksummed file's envelope (LoadSchedulerState) and the state's
// checked decoding. The first byte picks the mode (modulo 3): 0 decodes the rest as the payload;
// 1 seals the rest as a checksummed file (its length and CRC fixed, so the payload is reached) and
// loads it; 2 loads the rest as the file exactly as it is.
// Corpus: fuzz/corpus/scheduler_state/.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/file_io.h"
#include "fuzz/fuzz_support.h"
#include "scheduler/scheduler_state.h"

namespace ember::fuzz {
namespace {

constexpr char kDir[] = "scheduler-state";

void Fuzz(uint8_t mode, std::string_view rest) {
  if (mode % 3 == 0) {
    auto state = scheduler::DecodeSchedulerState(rest);
    // What decodes encodes back to the same bytes: nothing is read that is not kept.
    if (state.ok() && scheduler::EncodeSchedulerState(*state) != rest) __builtin_trap();
    return;
  }
  ClearScratch(kDir);
  if (!MakeDirectories(ScratchDir() + "/" + kDir).ok()) return;
  WriteScratchFile(std::string(kDir) + "/scheduler.state",
                   mode % 3 == 1 ? SealChecksummedFile(rest) : std::string(rest));
  (void)scheduler::LoadSchedulerState(ScratchDir() + "/" + kDir);
}

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET_WITH_MODE(ember::fuzz::Fuzz)
