// DirectAppender and DirectReader: O_DIRECT with aligned buffers, and the buffered fallback.
#include "common/direct_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ember {
namespace {

// Bytes moved per write or read call: large enough that a call's cost is the bytes.
constexpr size_t kChunkBytes = size_t{4} << 20;

Status Errno(const std::string& what) { return Unavailable(what + ": " + std::strerror(errno)); }

AlignedBuffer AllocateAligned(size_t bytes) {
  void* memory = nullptr;
  if (::posix_memalign(&memory, DirectAppender::kBlockBytes, bytes) != 0) return nullptr;
  return AlignedBuffer(static_cast<char*>(memory));
}

// Opens with O_DIRECT where the filesystem allows it, else without: the descriptor, whether it
// is direct, or -1 with errno set.
std::pair<int, bool> OpenMaybeDirect(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_DIRECT, 0644);
  if (fd >= 0 || errno != EINVAL) return {fd, fd >= 0};
  return {::open(path.c_str(), flags, 0644), false};
}

}  // namespace

void AlignedFree::operator()(char* bytes) const { std::free(bytes); }

DirectAppender::DirectAppender(std::string path, int fd, bool direct, AlignedBuffer buffer)
    : path_(std::move(path)), fd_(fd), direct_(direct), buffer_(std::move(buffer)) {}

DirectAppender::~DirectAppender() { ::close(fd_); }

Result<std::unique_ptr<DirectAppender>> DirectAppender::Open(const std::string& path,
                                                             bool truncate) {
  AlignedBuffer buffer = AllocateAligned(kChunkBytes);
  if (!buffer) return ResourceExhausted("no memory for the write buffer of '" + path + "'");
  const auto [fd, direct] =
      OpenMaybeDirect(path, O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0));
  if (fd < 0) return Errno("opening '" + path + "' for writing");
  return std::unique_ptr<DirectAppender>(
      new DirectAppender(path, fd, direct, std::move(buffer)));
}

Status DirectAppender::Append(std::span<const std::string_view> pieces) {
  for (const std::string_view piece : pieces) {
    for (size_t done = 0; done < piece.size();) {
      const size_t copy = std::min(piece.size() - done, kChunkBytes - buffered_);
      std::memcpy(buffer_.get() + buffered_, piece.data() + done, copy);
      buffered_ += copy;
      done += copy;
      if (buffered_ == kChunkBytes) RETURN_IF_ERROR(WriteBuffer());
    }
  }
  return buffered_ > 0 ? WriteBuffer() : Status::Ok();
}

Status DirectAppender::AppendZeros(uint64_t bytes) {
  while (bytes > 0) {
    const size_t zeros = static_cast<size_t>(std::min<uint64_t>(bytes, kChunkBytes - buffered_));
    std::memset(buffer_.get() + buffered_, 0, zeros);
    buffered_ += zeros;
    bytes -= zeros;
    if (buffered_ == kChunkBytes) RETURN_IF_ERROR(WriteBuffer());
  }
  return buffered_ > 0 ? WriteBuffer() : Status::Ok();
}

Status DirectAppender::WriteBuffer() {
  size_t bytes = buffered_;
  if (direct_) {
    bytes = (buffered_ + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
    std::memset(buffer_.get() + buffered_, 0, bytes - buffered_);
  }
  for (size_t done = 0; done < bytes;) {
    const ssize_t n = ::pwrite(fd_, buffer_.get() + done, bytes - done,
                               static_cast<off_t>(written_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("writing '" + path_ + "'");
    done += static_cast<size_t>(n);
  }
  // Keep the partial last block: the next append completes it and writes it again.
  const size_t whole = direct_ ? buffered_ / kBlockBytes * kBlockBytes : buffered_;
  std::memmove(buffer_.get(), buffer_.get() + whole, buffered_ - whole);
  written_ += whole;
  buffered_ -= whole;
  return Status::Ok();
}

Status DirectAppender::Sync() {
  if (::fdatasync(fd_) != 0) return Errno("syncing '" + path_ + "'");
  return Status::Ok();
}

DirectReader::DirectReader(std::string path, int fd, bool direct, AlignedBuffer buffer)
    : path_(std::move(path)), fd_(fd), direct_(direct), buffer_(std::move(buffer)) {}

DirectReader::~DirectReader() { ::close(fd_); }

Result<std::unique_ptr<DirectReader>> DirectReader::Open(const std::string& path) {
  AlignedBuffer buffer = AllocateAligned(kChunkBytes);
  if (!buffer) return ResourceExhausted("no memory for the read buffer of '" + path + "'");
  const auto [fd, direct] = OpenMaybeDirect(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno("opening '" + path + "'");
  return std::unique_ptr<DirectReader>(new DirectReader(path, fd, direct, std::move(buffer)));
}

Status DirectReader::Fill() {
  begin_ = end_ = 0;
  while (end_ < kChunkBytes) {
    // Direct reads start at block boundaries: only the last read of the file comes up short.
    const ssize_t n = ::pread(fd_, buffer_.get() + end_, kChunkBytes - end_,
                              static_cast<off_t>(offset_));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("reading '" + path_ + "'");
    if (n == 0) {
      at_end_ = true;
      break;
    }
    end_ += static_cast<size_t>(n);
    offset_ += static_cast<uint64_t>(n);
    if (direct_ && end_ % DirectAppender::kBlockBytes != 0) {
      at_end_ = true;  // a short direct read ends the file
      break;
    }
  }
  return Status::Ok();
}

Result<size_t> DirectReader::Read(char* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    if (begin_ == end_) {
      if (at_end_) break;
      RETURN_IF_ERROR(Fill());
      if (begin_ == end_) break;
    }
    const size_t copy = std::min(size - done, end_ - begin_);
    std::memcpy(out + done, buffer_.get() + begin_, copy);
    begin_ += copy;
    done += copy;
  }
  return done;
}

}  // namespace ember
