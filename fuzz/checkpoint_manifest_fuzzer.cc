// Fuzzes the checkpoint manifest (common/checkpoint_layout.h): ReadManifest, then
// ReadAndVerifyCheckpoint, which checks each file the manifest lists, and ReadCheckpointChain,
// which walks an increment's chain back to its base. The first byte picks the mode: bit 0 fixes
// the manifest's last "crc" line to match (so the lines before it are parsed), else it is left as
// it is; bit 1 writes the same manifest as the predecessor "../previous" as well, so a chain walk
// finds one more link. Listed paths that leave the checkpoint folder, and predecessors other than
// ../<name>, are not followed: the fuzzer reads nothing outside its scratch folder.
// Corpus: fuzz/corpus/checkpoint_manifest/.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/checkpoint_layout.h"
#include "common/crc32.h"
#include "common/file_io.h"
#include "fuzz/fuzz_support.h"

namespace ember::fuzz {
namespace {

// `text` with its last "crc" line (or a new one) holding the CRC-32 of the lines before it.
std::string SealManifest(std::string_view text) {
  size_t crc_line = text.rfind("crc ");
  if (crc_line == std::string_view::npos || (crc_line > 0 && text[crc_line - 1] != '\n')) {
    crc_line = text.size();
  }
  std::string sealed(text.substr(0, crc_line));
  if (!sealed.empty() && sealed.back() != '\n') sealed += '\n';
  char crc[16];
  std::snprintf(crc, sizeof(crc), "crc %08x\n", Crc32(sealed.data(), sealed.size()));
  return sealed + crc;
}

bool StaysInside(const Manifest& manifest) {
  for (const ManifestFile& file : manifest.files) {
    if (file.path.empty() || file.path.front() == '/' || file.path.find("..") != std::string::npos) {
      return false;
    }
  }
  const std::string& previous = manifest.chain.previous;
  return previous.empty() ||
         (previous.rfind("../", 0) == 0 && previous.size() > 3 &&
          previous.find('/', 3) == std::string::npos && previous.find("..", 3) == std::string::npos);
}

void Check(bool seal, bool with_previous, std::string_view text) {
  const std::string dir = ScratchDir() + "/checkpoint";
  static const bool made =
      MakeDirectories(dir).ok() && MakeDirectories(ScratchDir() + "/previous").ok();
  (void)made;
  const std::string manifest_text = seal ? SealManifest(text) : std::string(text);
  WriteScratchFile(std::string("checkpoint/") + kManifestName, manifest_text);
  WriteScratchFile(std::string("previous/") + kManifestName,
                   with_previous ? manifest_text : std::string());
  auto manifest = ReadManifest(dir);
  if (!manifest.ok() || !StaysInside(*manifest)) return;
  (void)ReadAndVerifyCheckpoint(dir);
  if (manifest->chain.sequence > 0) {
    auto previous = ReadManifest(ScratchDir() + "/" + manifest->chain.previous.substr(3));
    if (!previous.ok() || StaysInside(*previous)) (void)ReadCheckpointChain(dir, VerifyFiles::kYes);
  }
}

void Fuzz(uint8_t mode, std::string_view text) { Check(mode % 2 == 1, (mode & 2) != 0, text); }

}  // namespace
}  // namespace ember::fuzz

EMBER_FUZZ_TARGET_WITH_MODE(ember::fuzz::Fuzz)
