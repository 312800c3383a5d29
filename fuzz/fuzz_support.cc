// The helpers the fuzz targets share.
#include "fuzz/fuzz_support.h"

#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/check.h"
#include "common/crc32.h"

namespace ember::fuzz {
namespace {

constexpr PeerRole kRoles[] = {PeerRole::kInsecure, PeerRole::kTrainer, PeerRole::kServer,
                               PeerRole::kAdmin, PeerRole::kReader};

// Fixed, well-formed keys (Z85, 40 characters) for the authenticated roles: several, so that a
// conversation holds several identities of one role (one trainer key speaking for another's
// trainer, one server key moving another's partitions).
constexpr std::string_view kFuzzPublicKeys[] = {"rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7",
                                                "Aq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7",
                                                "Bq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"};

}  // namespace

void QuietLogs() { spdlog::set_level(spdlog::level::off); }

const std::string& ScratchDir() {
  // Never destroyed: the exit handler below still needs it.
  static const std::string* const dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") +
                          "/ember-fuzz-XXXXXX";
    EMBER_CHECK(mkdtemp(pattern.data()) != nullptr, "cannot make a scratch folder", pattern);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(ScratchDir(), ignored);
    });
    return new std::string(pattern);
  }();
  return *dir;
}

std::string WriteScratchFile(std::string_view name, std::string_view bytes) {
  std::string path = ScratchDir() + "/" + std::string(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EMBER_CHECK(out.good(), "cannot write the scratch file", path);
  return path;
}

void ClearScratch(std::string_view name) {
  std::error_code ignored;
  std::filesystem::remove_all(ScratchDir() + "/" + std::string(name), ignored);
}

std::string SealChecksummedFile(std::string_view file) {
  // The envelope: 8 bytes of magic, a uint32 version, a uint64 payload length, the payload, and
  // the CRC-32 of everything before it.
  constexpr size_t kLengthAt = 12, kHeaderBytes = 20, kTrailerBytes = 4;
  std::string sealed(file);
  if (sealed.size() < kHeaderBytes + kTrailerBytes) return sealed;
  const uint64_t length = sealed.size() - kHeaderBytes - kTrailerBytes;
  std::memcpy(sealed.data() + kLengthAt, &length, sizeof(length));
  const uint32_t crc = Crc32(sealed.data(), sealed.size() - kTrailerBytes);
  std::memcpy(sealed.data() + sealed.size() - kTrailerBytes, &crc, sizeof(crc));
  return sealed;
}

std::vector<std::string_view> SplitRecords(std::string_view input) {
  std::vector<std::string_view> records;
  while (records.size() < kMaxRecords) {
    const size_t end = input.find(kRecordSeparator);
    records.push_back(input.substr(0, end));
    if (end == std::string_view::npos) break;
    input.remove_prefix(end + kRecordSeparator.size());
  }
  return records;
}

std::string JoinRecords(const std::vector<std::string>& records) {
  std::string joined;
  for (size_t i = 0; i < records.size(); ++i) {
    if (i > 0) joined += kRecordSeparator;
    joined += records[i];
  }
  return joined;
}

Peer PeerFromByte(uint8_t byte) {
  const PeerRole role = kRoles[byte % std::size(kRoles)];
  const std::string_view key =
      kFuzzPublicKeys[byte / std::size(kRoles) % std::size(kFuzzPublicKeys)];
  return Peer{role, role == PeerRole::kInsecure ? "" : std::string(key)};
}

uint8_t ByteForRole(PeerRole role) {
  for (uint8_t i = 0; i < std::size(kRoles); ++i) {
    if (kRoles[i] == role) return i;
  }
  return 0;
}

std::vector<TableSpec> FuzzTables() {
  TableSpec user{.name = "user", .dim = 8, .seed = 1};
  user.optimizer.kind = OptimizerKind::kAdagrad;
  TableSpec item{.name = "item", .dim = 4, .seed = 2, .ttl_seconds = 60};
  item.optimizer.kind = OptimizerKind::kAdam;
  TableSpec ftrl{.name = "ftrl", .dim = 2, .seed = 3};
  ftrl.optimizer.kind = OptimizerKind::kFtrl;
  ftrl.initializer.kind = InitializerKind::kUniform;
  return {user, item, ftrl};
}

RoutingTable FuzzRouting() {
  return MakeBalancedRouting(kFuzzPartitions, {{0, "tcp://127.0.0.1:1"}, {1, "tcp://127.0.0.1:2"}},
                             1);
}

}  // namespace ember::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ember::fuzz::QuietLogs();
  return 0;
}
