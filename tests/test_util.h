// Shared helpers for ember's tests: temporary directories and file reading (child processes
// are common/child_process.h).
#pragma once

#include <string>

namespace ember::testing {

// A fresh directory under TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Reads a whole file into a string (empty when missing).
std::string ReadFile(const std::string& path);

}  // namespace ember::testing
