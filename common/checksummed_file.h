// Checksummed files: the envelope of every binary checkpoint file, and the little-endian
// writer/reader of their payloads.
//
// A file is: an 8-byte magic naming its kind, a uint32 format version, a uint64 payload length,
// the payload, and the CRC-32 of everything before it. ReadChecksummedFile returns the payload
// only when all of that checks out, and otherwise DataLoss naming the file and what was wrong
// (wrong kind, unknown version, truncated, trailing bytes, checksum mismatch); a missing file is
// NotFound. Writes are atomic (common/file_io.h). Reentrant.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/file_io.h"
#include "common/status.h"

namespace ember {

// `magic` must be exactly 8 characters (checked).
Status WriteChecksummedFile(const std::string& path, std::string_view magic, uint32_t version,
                            std::string_view payload, Flush flush = Flush::kNow);
Result<std::string> ReadChecksummedFile(const std::string& path, std::string_view magic,
                                        uint32_t version);

// Appends plain values and arrays to a payload (host byte order; ember runs on little-endian).
class PayloadWriter {
 public:
  template <typename T>
  void Put(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(T));
  }
  template <typename T>
  void PutArray(std::span<const T> values) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(values.data()), values.size_bytes());
  }
  void PutString(std::string_view text) {
    Put<uint32_t>(static_cast<uint32_t>(text.size()));
    bytes_.append(text);
  }
  const std::string& bytes() const { return bytes_; }
  std::string Take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

// Reads what a PayloadWriter wrote; every read is bounds-checked and fails (returns false) past
// the end, after which ok() stays false.
class PayloadReader {
 public:
  explicit PayloadReader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  bool Get(T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    return Copy(&value, sizeof(T));
  }
  template <typename T>
  bool GetArray(std::span<T> values) {
    static_assert(std::is_trivially_copyable_v<T>);
    return Copy(values.data(), values.size_bytes());
  }
  bool GetString(std::string& text);
  bool ok() const { return ok_; }
  size_t remaining() const { return bytes_.size() - offset_; }

 private:
  bool Copy(void* out, size_t size);

  std::string_view bytes_;
  size_t offset_ = 0;
  bool ok_ = true;
};

}  // namespace ember
