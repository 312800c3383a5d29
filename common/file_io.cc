// File helpers over POSIX calls (fsync is what std::ofstream cannot do).
#include "common/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ember {
namespace {

Status SystemError(const std::string& what, const std::string& path) {
  return Unavailable(what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view bytes, Flush flush) {
  // A name no other writer uses: this process and a count.
  static std::atomic<uint64_t> written_files{0};
  const std::string temp = path + ".tmp." + std::to_string(::getpid()) + "." +
                           std::to_string(written_files.fetch_add(1));
  // O_EXCL with O_NOFOLLOW: a file or symlink planted under that name is never written through.
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return SystemError("cannot create", temp);
  auto fail = [&](const char* what) {
    Status error = SystemError(what, temp);
    ::close(fd);
    ::unlink(temp.c_str());
    return error;
  };
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("cannot write");
    written += static_cast<size_t>(n);
  }
  if (flush == Flush::kNow && ::fsync(fd) != 0) return fail("cannot flush");
  if (::close(fd) != 0) {
    Status error = SystemError("cannot close", temp);
    ::unlink(temp.c_str());
    return error;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    Status error = SystemError("cannot rename to", path);
    ::unlink(temp.c_str());
    return error;
  }
  return Status::Ok();
}

bool IsTemporaryFileName(std::string_view filename) {
  return filename.find(".tmp.") != std::string_view::npos;
}

Status SyncFilesystemOf(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SystemError("cannot open", path);
  const int synced = ::syncfs(fd);
  Status status = synced == 0 ? Status::Ok() : SystemError("cannot flush the filesystem of", path);
  ::close(fd);
  return status;
}

Result<std::string> ReadWholeFile(const std::string& path, uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound("missing file '" + path + "'");
    return SystemError("cannot open", path);
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) return SystemError("cannot read", path);
  if (!S_ISREG(info.st_mode)) return NotFound("'" + path + "' is not a regular file");
  if (static_cast<uint64_t>(info.st_size) > max_bytes) {
    return ResourceExhausted("file '" + path + "' has " + std::to_string(info.st_size) +
                             " bytes, more than the " + std::to_string(max_bytes) +
                             " its reader accepts");
  }
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  size_t read = 0;
  while (read < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + read, bytes.size() - read);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return SystemError("cannot read", path);
    if (n == 0) break;  // it shrank meanwhile
    read += static_cast<size_t>(n);
  }
  bytes.resize(read);
  return bytes;
}

Result<std::string> CanonicalDirectory(const std::string& dir, std::string_view what) {
  if (dir.empty()) return InvalidArgument(std::string(what) + ": an empty directory name");
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(dir, error);
  std::filesystem::path canonical;
  if (!error) canonical = std::filesystem::weakly_canonical(absolute, error);
  if (error) {
    return InvalidArgument(std::string(what) + " '" + dir + "': " + error.message());
  }
  std::string text = canonical.lexically_normal().string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

bool IsAbsoluteNormalPath(std::string_view path) {
  if (path.empty() || path.front() != '/' || path.find('\0') != std::string_view::npos) {
    return false;
  }
  if (path == "/") return true;
  if (path.back() == '/') return false;
  return std::filesystem::path(path).lexically_normal().string() == path;
}

Status MakeDirectories(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Unavailable("cannot create directory '" + dir + "': " + error.message());
  return Status::Ok();
}

}  // namespace ember
