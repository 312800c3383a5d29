// ScratchDirectory: a fresh private directory (mode 0700) under the system's temporary folder,
// removed with everything in it when the object goes away.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ember {

class ScratchDirectory {
 public:
  // A new directory named <temp>/<prefix>XXXXXX; Unavailable naming the reason when none can be
  // made.
  static Result<std::unique_ptr<ScratchDirectory>> Make(std::string_view prefix);
  ~ScratchDirectory();
  ScratchDirectory(const ScratchDirectory&) = delete;
  ScratchDirectory& operator=(const ScratchDirectory&) = delete;

  const std::string& path() const { return path_; }

 private:
  explicit ScratchDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace ember
