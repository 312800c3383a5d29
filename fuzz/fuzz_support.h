// What ember's fuzz targets (fuzz/*_fuzzer.cc) share: silenced logs, a scratch folder for the
// inputs ember reads from files, the record framing of inputs that carry several messages, and the
// Peer a message comes from. The corpus writer (fuzz/corpus_writer.cc) uses the same framing.
//
// Single-threaded, like libFuzzer's loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/peer.h"
#include "common/routing_table.h"
#include "common/table_spec.h"

namespace ember::fuzz {

// Turns ember's logging off: a fuzzer feeds it millions of bad inputs, each logged otherwise.
// Every target does so first (this library defines LLVMFuzzerInitialize).
void QuietLogs();

// The process's own scratch folder under TMPDIR (or /tmp), made on first use and removed with its
// contents when the process exits normally.
const std::string& ScratchDir();
// Writes `bytes` to ScratchDir()/name (replacing it, without flushing to disk); returns its path.
std::string WriteScratchFile(std::string_view name, std::string_view bytes);
// Removes everything in ScratchDir()/name (a file or a folder), so one input sees nothing another
// left behind.
void ClearScratch(std::string_view name);

// The input as text, for the readers that take strings.
inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Checksummed files (common/checksummed_file.h) guard their payload with a length and a CRC-32,
// which random bytes never match. The file fuzzers take a mode byte first: kRawFile uses the rest
// as the file, kSealedFile first fixes the rest's length field and checksum (magic and version stay
// as the input has them), so that the reader's payload parsing is reached too.
enum class FileMode : uint8_t { kRawFile = 0, kSealedFile = 1 };
// The length field and trailing checksum of `file` set to match its bytes (unchanged when it is
// shorter than the envelope).
std::string SealChecksummedFile(std::string_view file);

// Inputs made of several messages (a conversation with a handler): records separated by
// kRecordSeparator. At most kMaxRecords are used, so one input stays quick.
inline constexpr std::string_view kRecordSeparator = "\n#ember-record#\n";
inline constexpr size_t kMaxRecords = 64;
std::vector<std::string_view> SplitRecords(std::string_view input);
std::string JoinRecords(const std::vector<std::string>& records);

// The Peer a message comes from, chosen by one byte of the input: its role (the value modulo the
// number of roles) and, for an authenticated role, which of a few keys it holds (the rest of the
// value), so that one conversation has several identities of a role; and the byte that chooses
// `role` with the first key.
Peer PeerFromByte(uint8_t byte);
uint8_t ByteForRole(PeerRole role);

// The tables the handler and file fuzzers serve (three optimizer families, one table with expiry;
// none with admission, whose 4 MiB sketch per table would make a fresh shard per input ten times
// slower), and their routing table: kFuzzPartitions partitions over two servers,
// so that server 0 owns the first half and some keys belong to the other server.
inline constexpr uint32_t kFuzzPartitions = 16;
std::vector<TableSpec> FuzzTables();
RoutingTable FuzzRouting();

}  // namespace ember::fuzz

// Defines a target's entry point: `run(std::string_view input)` gets every input.
#define EMBER_FUZZ_TARGET(run)                                                    \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {       \
    run(::ember::fuzz::AsText(data, size));                                       \
    return 0;                                                                     \
  }
// The same for targets whose first byte picks a mode: `run(uint8_t mode, std::string_view rest)`
// gets every non-empty input.
#define EMBER_FUZZ_TARGET_WITH_MODE(run)                                          \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {       \
    if (size > 0) run(data[0], ::ember::fuzz::AsText(data + 1, size - 1));        \
    return 0;                                                                     \
  }
