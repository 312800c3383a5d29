// Sequential files written and read around the page cache (O_DIRECT), for logs that are written
// once and read back rarely.
//
// Appending to a file through the page cache allocates a page per 4 KiB written; on the machines
// we measured that cost 2-3 CPU seconds per GiB, where writing the same bytes with O_DIRECT took
// 0.13 (and the disk took them at 750-800 MB/s). DirectAppender copies what it is given into an
// aligned buffer and writes whole blocks: the last partial block stays in the buffer, written
// padded with zeros, and is written again, completed, by the next append. So after an append
// returns, the file holds everything appended so far, followed by zeros up to the block's end.
// DirectReader reads such a file back in large aligned chunks, also around the page cache.
//
// Where the filesystem refuses O_DIRECT (some tmpfs), both fall back to ordinary reads and writes
// (no padding), which is correct, only slower. Errors name the path and the system's reason. Not
// thread-safe: one writer (or reader) at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ember {

// Frees what an aligned buffer's allocation returned.
struct AlignedFree {
  void operator()(char* bytes) const;
};
using AlignedBuffer = std::unique_ptr<char[], AlignedFree>;

class DirectAppender {
 public:
  // Writes are aligned to this (a multiple of any device's logical block size).
  static constexpr size_t kBlockBytes = 4096;

  // Opens `path` for appending from its start: created when missing, and otherwise overwritten
  // from byte 0 (truncated first when `truncate`; not truncating a file whose blocks exist
  // spares the filesystem allocating them again).
  static Result<std::unique_ptr<DirectAppender>> Open(const std::string& path, bool truncate);
  ~DirectAppender();
  DirectAppender(const DirectAppender&) = delete;
  DirectAppender& operator=(const DirectAppender&) = delete;

  // Appends the pieces, in order, then writes the last partial block padded with zeros.
  Status Append(std::span<const std::string_view> pieces);
  // Appends `bytes` zero bytes, written like any others (neither a hole nor preallocated blocks,
  // which a filesystem still has to convert when they are first written).
  Status AppendZeros(uint64_t bytes);
  // fdatasync: what was appended survives a machine crash.
  Status Sync();

  bool direct() const { return direct_; }
  uint64_t size() const { return written_ + buffered_; }  // bytes appended so far
  const std::string& path() const { return path_; }

 private:
  DirectAppender(std::string path, int fd, bool direct, AlignedBuffer buffer);
  // Writes the buffer (padded to whole blocks when direct) at written_; keeps the partial last
  // block buffered when direct.
  Status WriteBuffer();

  const std::string path_;
  const int fd_;
  const bool direct_;
  AlignedBuffer buffer_;
  uint64_t written_ = 0;   // bytes before the buffer's start (whole blocks when direct)
  size_t buffered_ = 0;    // bytes in the buffer, appended after written_
};

class DirectReader {
 public:
  static Result<std::unique_ptr<DirectReader>> Open(const std::string& path);
  ~DirectReader();
  DirectReader(const DirectReader&) = delete;
  DirectReader& operator=(const DirectReader&) = delete;

  // Reads up to `size` bytes into `out`; returns how many (fewer only at the end of the file).
  Result<size_t> Read(char* out, size_t size);

 private:
  DirectReader(std::string path, int fd, bool direct, AlignedBuffer buffer);
  Status Fill();  // reads the next chunk into the buffer

  const std::string path_;
  const int fd_;
  const bool direct_;
  AlignedBuffer buffer_;
  uint64_t offset_ = 0;  // of the file, after the bytes in the buffer
  size_t begin_ = 0, end_ = 0;  // the buffer's unread bytes
  bool at_end_ = false;
};

}  // namespace ember
