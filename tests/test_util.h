// Shared helpers for ember's tests: temporary directories, the shared data sets, file reading and
// environment variables set for one test (child processes are common/child_process.h).
#pragma once

#include <chrono>
#include <cstdlib>
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

// Where the shared data sets are (MovieLens 100K in ml-100k/): $EMBER_TEST_DATA_DIR when set,
// else the data folder beside the checkout. A test that needs a set skips, or falls back to a
// small file of its own, when it is not there; ctest runs those tests both ways (the
// WithoutSharedData.* entries point the variable at a folder that does not exist).
std::string SharedDataDir();

// Reads a whole file into a string (empty when missing).
std::string ReadFile(const std::string& path);
// The first line of `path` once it holds a whole one (a process writing where it listens), waiting
// up to `timeout`; empty if it never did.
std::string WaitForLine(const std::string& path, std::chrono::milliseconds timeout);

// Sets an environment variable for one test (the processes it starts inherit it) and unsets it
// when the test ends, also when an assertion ends it early.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedVariable() { unsetenv(name_); }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
};

}  // namespace ember::testing
