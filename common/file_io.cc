// File helpers over POSIX calls (fsync is what std::ofstream cannot do).
#include "common/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ember {
namespace {

Status SystemError(const std::string& what, const std::string& path) {
  return Unavailable(what + " '" + path + "': " + std::strerror(errno));
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view bytes, Flush flush) {
  const std::string temp = path + ".tmp";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return SystemError("cannot create", temp);
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status error = SystemError("cannot write", temp);
      ::close(fd);
      return error;
    }
    written += static_cast<size_t>(n);
  }
  if (flush == Flush::kNow && ::fsync(fd) != 0) {
    Status error = SystemError("cannot flush", temp);
    ::close(fd);
    return error;
  }
  if (::close(fd) != 0) return SystemError("cannot close", temp);
  if (::rename(temp.c_str(), path.c_str()) != 0) return SystemError("cannot rename to", path);
  return Status::Ok();
}

Status SyncFilesystemOf(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SystemError("cannot open", path);
  const int synced = ::syncfs(fd);
  Status status = synced == 0 ? Status::Ok() : SystemError("cannot flush the filesystem of", path);
  ::close(fd);
  return status;
}

Result<std::string> ReadWholeFile(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return NotFound("missing file '" + path + "'");
  std::ifstream in(path, std::ios::binary);
  if (!in) return SystemError("cannot open", path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return SystemError("cannot read", path);
  return std::move(bytes).str();
}

Status MakeDirectories(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Unavailable("cannot create directory '" + dir + "': " + error.message());
  return Status::Ok();
}

}  // namespace ember
