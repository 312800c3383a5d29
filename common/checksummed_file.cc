// Checksummed files: envelope layout and checks.
#include "common/checksummed_file.h"

#include "common/check.h"
#include "common/crc32.h"
#include "common/file_io.h"

namespace ember {
namespace {

constexpr size_t kMagicBytes = 8;
constexpr size_t kHeaderBytes = kMagicBytes + sizeof(uint32_t) + sizeof(uint64_t);
constexpr size_t kTrailerBytes = sizeof(uint32_t);

}  // namespace

Status WriteChecksummedFile(const std::string& path, std::string_view magic, uint32_t version,
                            std::string_view payload, Flush flush) {
  EMBER_CHECK(magic.size() == kMagicBytes, magic);
  PayloadWriter file;
  file.PutArray(std::span(magic.data(), magic.size()));
  file.Put(version);
  file.Put<uint64_t>(payload.size());
  file.PutArray(std::span(payload.data(), payload.size()));
  file.Put(Crc32(file.bytes().data(), file.bytes().size()));
  return WriteFileAtomically(path, file.bytes(), flush);
}

Result<std::string> ReadChecksummedFile(const std::string& path, std::string_view magic,
                                        uint32_t version) {
  ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(path));
  auto corrupt = [&path](const std::string& what) {
    return DataLoss("checkpoint file '" + path + "' is corrupt: " + what);
  };
  if (bytes.size() < kHeaderBytes + kTrailerBytes) return corrupt("truncated header");
  if (std::string_view(bytes).substr(0, kMagicBytes) != magic) {
    return corrupt("not a '" + std::string(magic) + "' file");
  }
  PayloadReader header(std::string_view(bytes).substr(kMagicBytes));
  uint32_t file_version = 0;
  uint64_t length = 0;
  header.Get(file_version);
  header.Get(length);
  if (file_version != version) {
    return corrupt("format version " + std::to_string(file_version) + ", expected " +
                   std::to_string(version));
  }
  if (length != bytes.size() - kHeaderBytes - kTrailerBytes) {
    return corrupt("header says " + std::to_string(length) + " payload bytes, file holds " +
                   std::to_string(bytes.size() - kHeaderBytes - kTrailerBytes) +
                   " (truncated or padded)");
  }
  uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - kTrailerBytes, kTrailerBytes);
  if (stored != Crc32(bytes.data(), bytes.size() - kTrailerBytes)) {
    return corrupt("checksum mismatch");
  }
  return bytes.substr(kHeaderBytes, length);
}

bool PayloadReader::GetString(std::string& text) {
  uint32_t size = 0;
  if (!Get(size) || size > remaining()) return ok_ = false;
  text.assign(bytes_.substr(offset_, size));
  offset_ += size;
  return true;
}

bool PayloadReader::Copy(void* out, size_t size) {
  if (!ok_ || size > remaining()) return ok_ = false;
  if (size == 0) return true;  // `out` may be null then (an empty array), which memcpy forbids
  std::memcpy(out, bytes_.data() + offset_, size);
  offset_ += size;
  return true;
}

}  // namespace ember
