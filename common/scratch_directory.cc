// ScratchDirectory implementation.
#include "common/scratch_directory.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ember {

Result<std::unique_ptr<ScratchDirectory>> ScratchDirectory::Make(std::string_view prefix) {
  std::error_code error;
  const std::filesystem::path temp = std::filesystem::temp_directory_path(error);
  if (error) return Unavailable("no temporary folder: " + error.message());
  std::string pattern = (temp / (std::string(prefix) + "XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return Unavailable("cannot make a scratch folder '" + pattern + "': " + std::strerror(errno));
  }
  return std::unique_ptr<ScratchDirectory>(new ScratchDirectory(pattern));
}

ScratchDirectory::~ScratchDirectory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace ember
