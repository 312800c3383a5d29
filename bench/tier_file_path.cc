// The cold path's floor over a plain file: timed preads, pwrites and empty system calls
// (tier_file_path.h).
#include "bench/tier_file_path.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "bench/internal/process_usage.h"

namespace ember::bench {
namespace {

// Random row offsets the timed reads cycle through, drawn before the clock starts.
constexpr size_t kOffsets = size_t{1} << 16;

Status FileError(const std::string& what, const std::string& path) {
  return Unavailable(what + " " + path + ": " + std::strerror(errno));
}

// The file, closed and removed when done.
struct RowFile {
  std::string path;
  int fd = -1;
  ~RowFile() {
    if (fd < 0) return;
    ::close(fd);
    ::unlink(path.c_str());
  }
};

// Fills the file with `bytes` zero bytes, syncs it, then reads it through once.
Status WriteAndReadThrough(const RowFile& file, uint64_t bytes) {
  std::vector<char> chunk(size_t{1} << 20);
  for (uint64_t at = 0; at < bytes; at += chunk.size()) {
    const size_t size = static_cast<size_t>(std::min<uint64_t>(chunk.size(), bytes - at));
    if (::pwrite(file.fd, chunk.data(), size, static_cast<off_t>(at)) != ssize_t(size)) {
      return FileError("writing", file.path);
    }
  }
  // On disk before the clock starts, as a store's file long written is: its rows' blocks are
  // allocated and its pages clean until written again.
  if (::fdatasync(file.fd) != 0) return FileError("syncing", file.path);
  for (uint64_t at = 0; at < bytes; at += chunk.size()) {
    const size_t size = static_cast<size_t>(std::min<uint64_t>(chunk.size(), bytes - at));
    if (::pread(file.fd, chunk.data(), size, static_cast<off_t>(at)) != ssize_t(size)) {
      return FileError("reading", file.path);
    }
  }
  return Status::Ok();
}

// This thread's CPU per call of `call(i)`, for i = 0, 1, ... for about `seconds`; false from a
// call stops the loop with the file's error.
template <typename Call>
Result<double> MicrosecondsPerCall(double seconds, const RowFile& file, const char* what,
                                   Call&& call) {
  const pid_t self = gettid();
  uint64_t calls = 0;
  const double cpu_before = ThreadCpuSeconds(self);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    for (size_t i = 0; i < 1024; ++i, ++calls) {
      if (!call(calls)) return FileError(what, file.path);
    }
  }
  return 1e6 * (ThreadCpuSeconds(self) - cpu_before) / static_cast<double>(calls);
}

}  // namespace

Result<FilePathFigures> MeasureFilePath(const std::string& directory, uint64_t rows,
                                        size_t row_bytes, double seconds) {
  if (rows == 0 || row_bytes == 0) return InvalidArgument("the file path needs rows of some bytes");
  rows = std::min(rows, kFilePathMaxRows);
  RowFile file{directory + "/ember-file-path-rows"};
  file.fd = ::open(file.path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (file.fd < 0) return FileError("creating", file.path);
  RETURN_IF_ERROR(WriteAndReadThrough(file, rows * row_bytes));
  std::mt19937_64 random(rows);
  std::vector<off_t> offsets(kOffsets);
  for (off_t& offset : offsets) offset = static_cast<off_t>(random() % rows * row_bytes);
  std::vector<char> row(row_bytes);
  FilePathFigures figures;
  const auto read = [&](uint64_t i) {
    return ::pread(file.fd, row.data(), row_bytes, offsets[i % offsets.size()]) > 0;
  };
  // The file holds zeros, so writing zero rows leaves it as it was. A batch of rows is written at
  // the next place of the file, wrapping round: as a store that appends evicted rows would.
  const size_t batch_bytes = kFileWriteBatch * row_bytes;
  const std::vector<char> zeros(batch_bytes);
  const uint64_t batches = std::max<uint64_t>(1, rows * row_bytes / batch_bytes);
  const auto write = [&](uint64_t i) {
    const off_t at = static_cast<off_t>(i % batches * batch_bytes);
    return ::pwrite(file.fd, zeros.data(), batch_bytes, at) == ssize_t(batch_bytes);
  };
  ASSIGN_OR_RETURN(figures.read_us, MicrosecondsPerCall(seconds, file, "reading", read));
  ASSIGN_OR_RETURN(const double batch_us, MicrosecondsPerCall(seconds, file, "writing", write));
  figures.write_us = batch_us / kFileWriteBatch;
  ASSIGN_OR_RETURN(figures.syscall_us, MicrosecondsPerCall(seconds, file, "calling", [](uint64_t) {
                     ::syscall(SYS_getppid);
                     return true;
                   }));
  return figures;
}

}  // namespace ember::bench
